"""`train report`'s tables on a hand-built run, every number worked out in the comments: bucket edges,
outcome shares, the clipped and rounded cluster interval, metric ranges over a bucket's steps, passes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from trialbook.training.analysis import _metric_ranges, bucket_table, cluster_ci, pass_table
from trialbook.training.load import OUTCOME_LIST, TrainData

# (task, wv, epoch, outcome, graded, n, p2p)
ROWS = [
    ("a", 0, 0, "resolved", True, 2, False),
    ("b", 3, 0, "unresolved", True, 1, True),
    ("b", 4, 0, "agent_timeout", False, 1, False),
    ("a", 5, 1, "unresolved", True, 1, False),
    ("a", 9, 1, "format_error", False, 1, False),
    ("b", 7, 1, "resolved", True, 3, False),
    ("c", -1, -1, "resolved", True, 5, False),  # no weight version and no epoch: in neither table
]


def _data() -> TrainData:
    names = ["a", "b", "c"]
    return TrainData(
        n=np.array([r[5] for r in ROWS], dtype=np.int64),
        task=np.array([names.index(r[0]) for r in ROWS], dtype=np.int32),
        task_names=names,
        repo=np.zeros(len(ROWS), dtype=np.int32),
        repo_names=["o/r"],
        outcome=np.array([OUTCOME_LIST.index(r[3]) for r in ROWS], dtype=np.int8),
        graded=np.array([r[4] for r in ROWS]),
        resolved=np.array([r[3] == "resolved" for r in ROWS]),
        partial=np.zeros(len(ROWS), dtype=bool),
        wins=np.array([r[5] * (r[3] == "resolved") for r in ROWS], dtype=np.float64),  # resolved metric
        p2p=np.array([r[6] for r in ROWS]),
        step=np.array([r[1] for r in ROWS], dtype=np.int64),
        wv=np.array([r[1] for r in ROWS], dtype=np.int64),
        epoch=np.array([r[2] for r in ROWS], dtype=np.int64),
    )


STEPS = [  # out of order: the running minimum must not start from the running maximum
    {"step": 4, "metrics": {"kl": 0.3, "loss": 1.23457}},
    {"step": 2, "metrics": {"kl": 0.05}},
    {"step": 0, "metrics": {"kl": 0.1}},
    {"step": 5, "metrics": {"kl": 0.2}},
    {"step": 10, "metrics": {"kl": 9.0}},
]


def test_bucket_table_by_hand():
    first, second = bucket_table(_data(), 5, STEPS)
    # wv 0..4: a 2/2, b 0/1 judged, b's timeout ungraded; two clusters, p = 2/3, SE = 4/9: clipped to [0, 100]
    assert first == {
        "wv_from": 0, "wv_to": 4, "trajectories": 4, "judged": 3, "pass_pct": 66.67, "ci_pct": [0.0, 100.0],
        "outcome_pct": {"agent_timeout": 25.0, "p2p_regression": 25.0, "format_error": 0.0,
                        "context_overflow": 0.0, "incomplete": 0.0},
        "metrics": {"kl": [0.05, 0.3], "loss": [1.2346, 1.2346]},
    }  # fmt: skip
    # wv 5..9: a 0/1 judged (and a format error), b 3/3: p = 3/4
    assert second == {
        "wv_from": 5, "wv_to": 9, "trajectories": 5, "judged": 4, "pass_pct": 75.0, "ci_pct": [0.0, 100.0],
        "outcome_pct": {"agent_timeout": 0.0, "p2p_regression": 0.0, "format_error": 20.0,
                        "context_overflow": 0.0, "incomplete": 0.0},
        "metrics": {"kl": [0.2, 0.2]},
    }  # fmt: skip
    (one,) = bucket_table(_data(), 10, [])  # one bucket over wv 0..9: 7 of 9 judged, 5 of them resolved
    assert (one["wv_from"], one["wv_to"], one["trajectories"], one["judged"]) == (0, 9, 9, 7)
    assert one["pass_pct"] == round(100 * 5 / 7, 2) and one["metrics"] == {}


def test_metric_ranges_include_both_bucket_edges():
    assert _metric_ranges(STEPS, 4, 5) == {"kl": [0.2, 0.3], "loss": [1.2346, 1.2346]}
    assert _metric_ranges(STEPS, 0, 2) == {"kl": [0.05, 0.1]}
    assert _metric_ranges(STEPS, 6, 9) == {}


def test_cluster_ci_rounds_and_clips_by_hand():
    # group 0: six tasks of 4 judged with 4, 3, 2, 3, 4, 1 resolved: p = 17/24; residuals y - 4p square
    # to 41/6 in all, so Var = 6/5 * (41/6) / 24^2 = 41/2880; the upper end passes 1 and is clipped
    resolved = np.array([4.0, 3, 2, 3, 4, 1, 2])
    judged = np.array([4.0, 4, 4, 4, 4, 4, 3])
    group = np.array([0, 0, 0, 0, 0, 0, 1])
    lo = 17 / 24 - stats.t.ppf(0.975, 5) * math.sqrt(41 / 2880)
    assert cluster_ci(resolved, judged, group, 2) == [[round(100 * lo, 2), 100.0], None]  # group 1: one task
    # mirrored (failures for successes): the lower end passes 0 and is clipped
    assert cluster_ci(judged - resolved, judged, group, 2) == [[0.0, round(100 * (1 - lo), 2)], None]


def test_pass_table_by_hand():
    # epoch 0: a 2/2, b 0/1 + an ungraded timeout; epoch 1: a 0/1 + a format error, b 3/3; c has no epoch
    assert pass_table(_data()) == [
        {"pass": 0, "tasks": 2, "trajectories": 4, "judged": 3, "pass_pct": 66.67},
        {"pass": 1, "tasks": 2, "trajectories": 5, "judged": 4, "pass_pct": 75.0},
    ]


def _import(cli, path: Path, run: str, rows: list[dict], *extra: str) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("import", "jsonl", str(path), "--run", run, *extra)
    assert res.exit_code == 0, res.stderr


def test_train_report_fields_eval_overlap_and_exclusions(cli, tmp_path: Path):
    def row(task: str, repo: str, wv: int, reward: float) -> dict:
        return {"task_id": task, "repo": repo, "step": wv + 1, "wv": wv, "epoch": 0, "reward": reward}

    rows = [row("a__x-1", "a/x", 0, 1.0), row("a__x-1", "a/x", 1, 0.0), row("b__y-2", "b/y", 2, 1.0),
            row("c__z-3", "c/z", 3, 0.0), row("c__z-3", "c/z", 7, 1.0)]  # fmt: skip
    _import(cli, tmp_path / "rl.jsonl", "rl", rows, "--kind", "train")
    _import(cli, tmp_path / "ev.jsonl", "ev", [{"task_id": "a__x-1", "resolved": True},
                                               {"task_id": "q__q-9", "resolved": False}])  # fmt: skip
    report = json.loads(cli("train", "report", "rl", "--eval-set", "ev", "--json").stdout)
    assert (report["kind"], report["trajectories"], report["judged"], report["pass_pct"], report["tasks"]) == (
        "train", 5, 5, 60.0, 3
    )  # fmt: skip
    assert [(b["wv_from"], b["wv_to"]) for b in report["buckets"]] == [(0, 4), (5, 9)]  # the default bucket is 5
    assert report["eval_overlap"] == {"eval_set": "ev", "pool_tasks": 3, "overlap": 1}
    assert report["warnings"] == [
        "1 of the 3 training tasks are in the evaluation set ev: gains on them are confounded with memorisation;"
        " judge the run on held-out tasks"
    ]
    two = json.loads(cli("train", "report", "rl", "--exclude-repo", "a/x", "--exclude-repo", "b/y", "--json").stdout)
    assert two["excluded_repos"] == {"a/x": 2, "b/y": 1} and (two["trajectories"], two["tasks"]) == (2, 1)
    res = cli("train", "report", "rl", "--exclude-repo", "no/such", "--json")
    message = "--exclude-repo no/such: no trajectories of that repo in this run (repos: a/x, b/y, c/z)"
    assert res.stderr == f"error: {message}\n"
    one = cli("train", "report", "rl", "--bucket", "1", "--gpus", "1", "--json")  # the smallest allowed
    assert one.exit_code == 0, one.stderr
    assert [b["wv_from"] for b in json.loads(one.stdout)["buckets"]] == [0, 1, 2, 3, 7]

"""`train report`: encounter CIs paired over tasks (checked against scipy), cluster CIs (statsmodels),
and the synthetic generator's ground truth recovered through the real CLI and ledger."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from smallsample import adjusted_pp


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _random_run(seed: int = 7, tasks: int = 60, epochs: int = 4, rollouts: int = 4) -> list[dict]:
    """Trajectories with per-task difficulty, a per-encounter gain, and some ungraded ones."""
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.05, 0.95, tasks)
    rows = []
    for e in range(epochs):
        for t in rng.permutation(tasks)[: tasks - 3]:  # a few tasks skipped each pass
            for _ in range(rollouts):
                row = {"task_id": f"org{t % 3}__repo{t % 3}-{t}", "step": e * 10 + 1, "wv": e * 10, "epoch": e}
                u = rng.random()
                if u < 0.05:
                    row["outcome"] = "verifier_timeout"
                elif u < 0.08:
                    pass  # incomplete
                else:
                    row["reward"] = float(rng.random() < min(1.0, base[t] + 0.05 * e))
                rows.append(row)
    return rows


def _task_scores(rows: list[dict]) -> dict[str, dict[int, float]]:
    """Per task, per epoch: mean of graded trajectories (plain Python, independent of the report)."""
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if "reward" in r:
            cells[r["task_id"]][r["epoch"]].append(1.0 if r["reward"] >= 1.0 else 0.0)
        else:
            cells[r["task_id"]].setdefault(r["epoch"], [])  # sampled but ungraded: still an encounter
    return {t: {e: (sum(v) / len(v) if v else None) for e, v in ep.items()} for t, ep in cells.items()}


@pytest.fixture
def random_run(cli, tmp_path):
    rows = _random_run()
    assert (
        cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", rows)), "--run", "rl", "--kind", "train").exit_code == 0
    )
    return rows


def test_encounter_ci_is_paired_over_tasks_like_scipy(cli, random_run):
    report = json.loads(cli("train", "report", "rl", "--json").stdout)
    scores = _task_scores(random_run)
    rows = {r["k"]: r for r in report["encounters"]}
    assert sorted(rows) == [2, 3, 4]
    for k, row in rows.items():
        first, kth = [], []
        for ep in scores.values():
            order = sorted(ep)
            if len(order) >= k and ep[order[0]] is not None and ep[order[k - 1]] is not None:
                first.append(ep[order[0]])
                kth.append(ep[order[k - 1]])
        res = stats.ttest_rel(kth, first)
        ci = res.confidence_interval(0.95)
        assert row["tasks"] == len(first)
        assert row["diff_pp"] == pytest.approx(100 * (np.mean(kth) - np.mean(first)), abs=0.01)
        assert row["ci_pp"] == pytest.approx(adjusted_pp(np.subtract(kth, first)), abs=0.01)  # stats.kernel's
        assert row["ci_pp"] == pytest.approx([100 * ci.low, 100 * ci.high], abs=1.0)  # near scipy's t
        boot = stats.bootstrap((np.array(kth), np.array(first)), lambda a, b: np.mean(a - b), paired=True,
                               n_resamples=4000, random_state=1).confidence_interval  # fmt: skip
        assert row["ci_pp"][0] == pytest.approx(100 * boot.low, abs=1.5)
        assert row["ci_pp"][1] == pytest.approx(100 * boot.high, abs=1.5)
    # last - first over tasks graded at >= 3 encounters
    d = []
    for ep in scores.values():
        graded = [ep[e] for e in sorted(ep) if ep[e] is not None]
        first_graded = ep[min(ep)]
        if len(graded) >= 3 and first_graded is not None:
            d.append(graded[-1] - first_graded)
    ci = stats.ttest_1samp(d, 0).confidence_interval(0.95)
    assert report["last_minus_first"]["tasks"] == len(d)
    assert report["last_minus_first"]["ci_pp"] == pytest.approx(adjusted_pp(d), abs=0.01)
    assert report["last_minus_first"]["ci_pp"] == pytest.approx([100 * ci.low, 100 * ci.high], abs=1.0)


def test_bucket_ci_is_task_clustered_like_statsmodels(cli, random_run):
    report = json.loads(cli("train", "report", "rl", "--bucket", "20", "--json").stdout)
    first = report["buckets"][0]
    assert (first["wv_from"], first["wv_to"]) == (0, 19)
    graded = [r for r in random_run if r["wv"] < 20 and "reward" in r]
    y = np.array([1.0 if r["reward"] >= 1.0 else 0.0 for r in graded])
    groups = np.unique([r["task_id"] for r in graded], return_inverse=True)[1]
    fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    lo, hi = fit.conf_int(0.05)[0]
    assert first["judged"] == len(y)
    assert first["pass_pct"] == pytest.approx(100 * y.mean(), abs=0.01)
    assert first["ci_pct"] == pytest.approx([100 * lo, 100 * hi], abs=0.01)
    # clustering matters here: 4 rollouts of a task are not 4 independent draws
    naive = 1.96 * y.std(ddof=1) / np.sqrt(len(y))
    assert first["ci_pct"][1] - first["ci_pct"][0] > 1.3 * 200 * naive
    inc = sum(1 for r in random_run if r["wv"] < 20 and "reward" not in r and "outcome" not in r)
    assert first["outcome_pct"]["incomplete"] == pytest.approx(100 * inc / first["trajectories"], abs=0.01)


def test_passes_exclude_repo_and_eval_set_warning(cli, random_run, tmp_path):
    report = json.loads(cli("train", "report", "rl", "--json").stdout)
    for p in report["passes"]:
        mine = [r for r in random_run if r["epoch"] == p["pass"]]
        judged = [r for r in mine if "reward" in r]
        assert p["trajectories"] == len(mine) and p["tasks"] == len({r["task_id"] for r in mine})
        assert p["pass_pct"] == pytest.approx(100 * sum(r["reward"] >= 1 for r in judged) / len(judged), abs=0.01)
    ex = json.loads(cli("train", "report", "rl", "--exclude-repo", "org0/repo0", "--json").stdout)
    dropped = sum(1 for r in random_run if r["task_id"].startswith("org0__"))
    assert ex["excluded_repos"] == {"org0/repo0": dropped}
    assert ex["trajectories"] == len(random_run) - dropped
    assert [b["pass_pct_all_repos"] for b in ex["buckets"]] == [b["pass_pct"] for b in report["buckets"]]
    assert "pass_pct_all_repos" not in report["buckets"][0]
    assert report["warnings"] == [] and report["eval_overlap"] is None
    eval_list = tmp_path / "eval.txt"
    eval_list.write_text("org1__repo1-1\norg1__repo1-4\nunrelated__task-9\n")
    warned = json.loads(cli("train", "report", "rl", "--eval-set", str(eval_list), "--json").stdout)
    assert warned["eval_overlap"]["overlap"] == 2
    assert "memorisation" in warned["warnings"][0]


def test_report_bad_input(cli, random_run, tmp_path):
    for args, message in [
        (("--bucket", "0"), "--bucket must be at least 1"),
        (("--exclude-repo", "no/such"), "no trajectories of that repo"),
        (("--gpus", "0"), "--gpus must be at least 1"),
        (("--eval-set", "no-such-list"), "neither a task-list file nor a run"),
    ]:
        res = cli("train", "report", "rl", *args, "--json")
        assert res.exit_code == 2 and message in res.stderr and res.stdout == ""
    assert cli("train", "report", "ghost").exit_code == 2
    _write(tmp_path / "e.jsonl", [{"task_id": "a__b-1", "resolved": True}])
    assert cli("import", "jsonl", str(tmp_path / "e.jsonl"), "--run", "ev").exit_code == 0
    res = cli("train", "report", "ev")
    assert res.exit_code == 2 and "no training trajectories" in res.stderr


def test_generator_ground_truth_is_recovered(cli, tmp_path):
    traj, steps = tmp_path / "traj.jsonl", tmp_path / "steps.jsonl"
    res = cli("sim", "rollouts", "--out", str(traj), "--steps-out", str(steps), "--gain", "0.3", "--seed", "3",
              "--json", use_db=False)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    truth = json.loads(res.stdout)
    assert cli("import", "jsonl", str(traj), "--run", "gen", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "gen").exit_code == 0
    report = json.loads(cli("train", "report", "gen", "--gpus", "16", "--json").stdout)

    assert report["trajectories"] == truth["trajectories"]
    assert report["steps"] == truth["steps"]
    # the improvement on re-encountered tasks, within the report's own paired CI (+ a margin)
    for row in report["encounters"]:
        true_pp = truth["encounter_gain_pp"][str(row["k"])]
        half = (row["ci_pp"][1] - row["ci_pp"][0]) / 2
        assert abs(row["diff_pp"] - true_pp) < 1.3 * half, (row, true_pp)
        assert row["ci_pp"][0] > 0  # gain 0.3 logit per encounter is detectable
    # first passes of the pool do not improve (no transfer): pass 0 matches the first-encounter truth
    assert report["passes"][0]["pass_pct"] == pytest.approx(truth["first_encounter_pct"], abs=5)
    # the stall: empty weight versions and exactly the boundary steps flagged slow, on the boundary
    stalls = report["stalls"]
    assert stalls["empty_wv"] == truth["empty_wv"]
    assert [s["step"] for s in stalls["slow_steps"]] == truth["stall_steps"]
    assert all(s["epoch_boundary"] and s["wait_s"] == truth["stall_s"] for s in stalls["slow_steps"])
    expected_lost = 16 * sum(truth["stall_s"] - stalls["median_step_s"] for _ in truth["stall_steps"]) / 3600
    assert stalls["lost_gpu_hours"] == pytest.approx(expected_lost, abs=0.05)
    # cut-off trajectories are incomplete, not failures
    incomplete = sum(b["trajectories"] * b["outcome_pct"]["incomplete"] / 100 for b in report["buckets"])
    assert round(incomplete) == truth["incomplete"]
    assert report["judged"] == truth["trajectories"] - truth["incomplete"]

    human = cli("train", "report", "gen", "--gpus", "16")
    assert human.exit_code == 0
    assert "4th encounter - 1st" in human.stdout and "at epoch boundaries" in human.stdout


def test_generator_without_learning_or_stall(cli, tmp_path):
    traj, steps = tmp_path / "traj.jsonl", tmp_path / "steps.jsonl"
    res = cli("sim", "rollouts", "--out", str(traj), "--steps-out", str(steps), "--gain", "0", "--cross-epoch",
              "--incomplete", "0", "--seed", "5", "--json", use_db=False)  # fmt: skip
    truth = json.loads(res.stdout)
    assert truth["stall_steps"] == [] and truth["empty_wv"] == []
    cli("import", "jsonl", str(traj), "--run", "flat", "--kind", "train")
    cli("import", "steps", str(steps), "--run", "flat")
    report = json.loads(cli("train", "report", "flat", "--json").stdout)
    assert report["stalls"]["empty_wv"] == [] and report["stalls"]["slow_steps"] == []
    assert report["stalls"]["lost_gpu_hours"] is None
    assert all(abs(r["diff_pp"]) < 1.3 * (r["ci_pp"][1] - r["ci_pp"][0]) / 2 for r in report["encounters"])


def test_p2p_regression_share_reads_the_pass_to_pass_statuses(cli, tmp_path):
    def row(tests: dict | None, **kw) -> dict:
        return {"task_id": "a__b-1", "step": 1, "wv": 0, "epoch": 0, "tests": tests, **kw}

    rows = [
        row({"FAIL_TO_PASS": {"t1": "fail"}, "PASS_TO_PASS": {"t2": "pass"}}, reward=0.0),  # F2P only
        row({"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "pass", "t3": "fail"}}, reward=0.0),
        row({"PASS_TO_PASS": {"t2": "error"}}, outcome="agent_timeout"),  # no F2P test: not a P2P regression
        row({"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "missing"}}, reward=0.0),
        row({"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "fail"}}, reward=1.0),  # the tests decide
        row({"FAIL_TO_PASS": {'odd:"fail"': "fail"}, "PASS_TO_PASS": {'x[:"fail"]': "pass"}}, reward=0.0),
        row(None, reward=0.0),
        row({"FAIL_TO_PASS": {"t1": "fail"}, "PASS_TO_PASS": {"t2": "fail"}}, outcome="verifier_timeout"),
    ]
    path = _write(tmp_path / "p.jsonl", rows)
    assert cli("import", "jsonl", str(path), "--run", "rl", "--kind", "train").exit_code == 0
    (bucket,) = json.loads(cli("train", "report", "rl", "--json").stdout)["buckets"]
    assert bucket["trajectories"] == 8 and bucket["judged"] == 7
    assert bucket["outcome_pct"]["p2p_regression"] == pytest.approx(100 * 3 / 8)  # rows 2, 4 and 5
    assert bucket["outcome_pct"]["agent_timeout"] == pytest.approx(100 / 8)


def _in_memory(task: np.ndarray, epoch: np.ndarray, resolved: np.ndarray):
    from trialbook.training.load import OUTCOME_LIST, TrainData

    outcome = np.where(resolved, OUTCOME_LIST.index("resolved"), OUTCOME_LIST.index("unresolved")).astype(np.int8)
    ones = np.ones(len(task), dtype=bool)
    return TrainData(
        n=np.ones(len(task), dtype=np.int64), task=task.astype(np.int32),
        task_names=[str(i) for i in range(task.max() + 1)],
        repo=np.zeros(len(task), np.int32), repo_names=["r"], outcome=outcome, graded=ones, resolved=resolved,
        partial=~ones, wins=resolved.astype(np.float64), p2p=~ones, step=epoch * 10 + 1, wv=epoch * 10, epoch=epoch,
    )  # fmt: skip


def test_ci_coverage_by_simulation():
    """95% intervals cover the truth ~95% of the time on clustered data (where a per-trajectory CI does not)."""
    from trialbook.training.analysis import bucket_table
    from trialbook.training.encounters import encounter_table

    rng = np.random.default_rng(11)
    tasks, epochs, rollouts, sims = 80, 2, 8, 300
    task = np.repeat(np.tile(np.arange(tasks), epochs), rollouts)
    epoch = np.repeat(np.repeat(np.arange(epochs), tasks), rollouts)
    cover_enc = cover_bucket = cover_naive = 0
    for _ in range(sims):
        p = rng.uniform(0.05, 0.95, tasks)  # no learning: true encounter gain is 0; population rate 0.5
        resolved = rng.random(len(task)) < p[task]
        data = _in_memory(task, epoch, resolved)
        (row,), _ = encounter_table(data)
        cover_enc += row["ci_pp"][0] <= 0 <= row["ci_pp"][1]
        first = bucket_table(data.subset(epoch == 0), 10, [])[0]
        cover_bucket += first["ci_pct"][0] <= 50 <= first["ci_pct"][1]
        y = resolved[epoch == 0]
        half = 1.96 * np.sqrt(y.mean() * (1 - y.mean()) / len(y))
        cover_naive += y.mean() - half <= 0.5 <= y.mean() + half
    assert 0.91 <= cover_enc / sims <= 0.99
    assert 0.91 <= cover_bucket / sims <= 0.99
    assert cover_naive / sims < 0.85  # treating a task's 8 rollouts as independent undercovers

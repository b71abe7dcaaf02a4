"""After a rerun, `compare`, `plan` and `train report` count only the current trial of each attempt.

The rerun here goes through the harness's own writer (`record_trial(..., supersedes=...)`, what
`trialbook rerun` calls) on imported runs, so it needs no Docker; tests/harness/test_rerun_counts_docker.py
does the same after a real `trialbook rerun`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialbook.harness.trial.execution import TrialResult
from trialbook.harness.trial.writer import record_trial
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome
from trialbook.records import Trial
from trialbook.stats.synthetic import task_ids, write_jsonl

IDS = task_ids(20)
TIMED_OUT = IDS[10:14]


def _rerun(db: str, run: str, outcome: str, **new: object) -> int:
    """Supersede every current trial of `run` with `outcome` by a resolved one; returns how many."""
    ledger = Ledger(db)
    run_id = ledger.get_run(run).id
    old = [t for t in ledger.trial_rows(run_id) if t.outcome == outcome]
    for t in old:
        trial = Trial(task_id=t.task_id, attempt=t.attempt, repo=t.repo, outcome=Outcome.RESOLVED,
                      reward=1.0, step=t.step, wv=t.wv, epoch=t.epoch, **new)  # fmt: skip
        record_trial(ledger, run_id, TrialResult(trial=trial, name=f"{t.task_id}__rerun"), supersedes=t.id)
    return len(old)


@pytest.fixture
def reran(cli, db: str, tmp_path: Path):
    """base solves tasks 0-9 of 20; cand too, and 4 agent timeouts (10-13) are rerun and then solved."""
    base = [{"task_id": t, "resolved": i < 10} for i, t in enumerate(IDS)]
    cand = [{"task_id": t, "reward": float(i < 10)} | ({"outcome": "agent_timeout"} if t in TIMED_OUT else {})
            for i, t in enumerate(IDS)]  # fmt: skip
    for name, lines in (("base", base), ("cand", cand)):
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    assert _rerun(db, "cand", "agent_timeout") == 4
    return cli


def test_compare_pairs_the_current_trials(reran) -> None:
    res = reran("compare", "base", "cand", "--json")
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)["comparisons"]
    # 14 of 20 resolved now; counting the 4 superseded timeouts too would give 4 tasks at 0.5 (60%)
    assert (row["tasks_paired"], row["base_pct"], row["cand_pct"], row["diff_pp"]) == (20, 50.0, 70.0, 20.0)
    assert (row["wins"], row["losses"], row["ties"]) == (4, 0, 16)
    assert row["attempts"]["cand"] == row["attempts"]["base"]
    assert json.loads(reran("show", "cand", "--json").stdout)["superseded"] == 4


def test_plan_estimates_from_the_current_trials(reran) -> None:
    res = reran("plan", "--tasks", "100", "--repeats", "1", "--effect", "5", "--from-run", "cand", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    # one current attempt per task at 70%: sampling variance 2 x 0.7 x 0.3 (superseded trials would make
    # 2 attempts on 4 tasks and a within-task variance instead)
    assert out["variance"]["sampling_k1"] == 0.42
    assert "1 attempt/task" in out["source"]["detail"]
    res = reran("plan", "--tasks", "100", "--repeats", "1", "--effect", "5", "--from-run", "base", "--vs", "cand",
                "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "20 paired tasks, Var(d) 0.1684" in json.loads(res.stdout)["source"]["detail"]  # d: 4 ones, 16 zeros


def test_train_report_counts_the_current_trajectories(cli, db: str, tmp_path: Path) -> None:
    rows = [{"task_id": t, "step": 1 + e, "wv": e, "epoch": e, "reward": float(i < 10)}
            | ({"outcome": "agent_timeout"} if e == 1 and t in TIMED_OUT else {})
            for e in (0, 1) for i, t in enumerate(IDS)]  # fmt: skip
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / "rl.jsonl", rows)), "--run", "rl", "--kind",
               "train").exit_code == 0  # fmt: skip
    assert _rerun(db, "rl", "agent_timeout") == 4
    res = cli("train", "report", "rl", "--json")
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert (report["trajectories"], report["judged"], report["pass_pct"]) == (40, 40, 60.0)  # 24 of 40
    (k2,) = report["encounters"]
    assert (k2["tasks"], k2["first_pct"], k2["kth_pct"], k2["diff_pp"]) == (20, 50.0, 70.0, 20.0)
    assert [(p["pass"], p["trajectories"], p["pass_pct"]) for p in report["passes"]] == [(0, 20, 50.0), (1, 20, 70.0)]

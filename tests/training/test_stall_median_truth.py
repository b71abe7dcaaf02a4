"""The stall detector's median step time against what the generator was told, not against the report itself."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

from steplog import timed_steps
from trialbook.training.stalls import SLOW_FACTOR, step_waits

STEP_S, STALL_S, GPUS = 600.0, 4500.0, 16


def test_median_step_time_is_the_generators_step_time(cli, tmp_path: Path) -> None:
    traj, steps = tmp_path / "traj.jsonl", tmp_path / "steps.jsonl"
    res = cli("sim", "rollouts", "--out", str(traj), "--steps-out", str(steps), "--pool", "160", "--seed", "11",
              "--step-s", str(STEP_S), "--stall-s", str(STALL_S), "--incomplete", "0", "--json",
              use_db=False)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    truth = json.loads(res.stdout)
    assert len(truth["stall_steps"]) == 3 and truth["steps"] == 40
    assert cli("import", "jsonl", str(traj), "--run", "gen", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "gen").exit_code == 0
    stalls = json.loads(cli("train", "report", "gen", "--gpus", str(GPUS), "--json").stdout)["stalls"]
    # 37 ordinary steps take STEP_S x lognormal(0, 0.15) (median STEP_S); 3 take STALL_S. Their mean is
    # ~900 s, their median within a few percent of STEP_S.
    assert stalls["median_step_s"] == pytest.approx(STEP_S, rel=0.04)
    assert [s["step"] for s in stalls["slow_steps"]] == truth["stall_steps"]
    assert stalls["lost_gpu_hours"] == pytest.approx(GPUS * 3 * (STALL_S - STEP_S) / 3600, rel=0.02)


def _report(cli, tmp_path: Path, waits: list[float], *gpus: str) -> dict:
    """`train report` on a one-task run whose steps took `waits` seconds."""
    run = f"w{len(list(tmp_path.glob('*.jsonl')))}"
    traj = [{"task_id": "a__b-1", "step": s, "wv": s - 1, "epoch": 0, "reward": 0.0} for s in range(1, len(waits) + 1)]
    steps = [{**s, "started_at": s["started_at"].isoformat(), "finished_at": s["finished_at"].isoformat()}
             for s in timed_steps(waits)]  # fmt: skip
    for name, rows in ((f"{run}.jsonl", traj), (f"{run}.steps.jsonl", steps)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(tmp_path / f"{run}.jsonl"), "--run", run, "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(tmp_path / f"{run}.steps.jsonl"), "--run", run).exit_code == 0
    res = cli("train", "report", run, *gpus, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["stalls"]


def test_one_long_step_among_short_ones_is_slow_by_the_median(cli, tmp_path: Path) -> None:
    # median 10 s, mean 28 s: the 100 s step is slow (> 5 x 10) only when judged by the median
    report = _report(cli, tmp_path, [10, 10, 10, 10, 100], "--gpus", "2")
    assert report["median_step_s"] == 10.0 and SLOW_FACTOR == 5.0
    assert report["slow_steps"] == [{"step": 5, "wait_s": 100.0, "epoch_boundary": False}]
    assert report["lost_gpu_hours"] == round(2 * 90 / 3600, 2)
    assert _report(cli, tmp_path, [10, 10, 10, 10, 50], "--gpus", "2")["slow_steps"] == []  # 50 is not > 5 x 10
    assert _report(cli, tmp_path, [10, 10, 10, 10, 100])["lost_gpu_hours"] is None


def test_a_wait_runs_from_the_previous_finish_or_the_own_start() -> None:
    steps = timed_steps([10, 20, 30])
    steps[1]["started_at"] = steps[1]["finished_at"] - timedelta(seconds=5)  # logged late: waited 20, not 5
    steps[2]["step"] = 4  # step 3 missing: step 4's wait is its own 30 s
    assert step_waits(steps) == {1: 10.0, 2: 20.0, 4: 30.0}


def _wv_report(cli, tmp_path: Path, run: str, rows: list[dict]) -> dict:
    (tmp_path / f"{run}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(tmp_path / f"{run}.jsonl"), "--run", run, "--kind", "train").exit_code == 0
    res = cli("train", "report", run, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["stalls"]


def test_empty_weight_versions_between_the_first_and_last_used(cli, tmp_path: Path) -> None:
    def row(wv: int, epoch: int = 0) -> dict:
        return {"task_id": f"a__b-{wv}", "step": wv + 1, "wv": wv, "epoch": epoch, "reward": 1.0}

    # versions 0 and 2 generated, 1 did not; no steps logged: no median, nothing slow
    stalls = _wv_report(cli, tmp_path, "gap", [row(0), row(2)])
    assert stalls == {"empty_wv": [1], "slow_steps": [], "median_step_s": None, "lost_gpu_hours": None}
    # a run that starts at version 3: 4 is empty, 0-2 are not "empty", they are before the run
    assert _wv_report(cli, tmp_path, "late", [row(3), row(5), row(6)])["empty_wv"] == [4]

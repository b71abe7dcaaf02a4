"""`train selection` recovers a planted selection bias: slow tasks' rollouts dropped from batches far more often
than fast tasks', seen by duration quartile, by task, and in the trained distribution's mean duration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import orjson

STEPS = 20


def _plant(tmp: Path, bias: bool) -> tuple[Path, Path, set[str]]:
    """40 tasks, 16 rollouts each; the 20 slow ones (~3000 s) lose 60% of their rollouts, the fast (~300 s) 5%."""
    rng = np.random.default_rng(7)
    rows, slow = [], set()
    for i in range(40):
        task = f"sympy__sympy-{2000 + i}"
        is_slow = i % 2 == 0
        if is_slow:
            slow.add(task)
        for _ in range(16):
            dur = float(rng.lognormal(np.log(3000 if is_slow else 300), 0.2))
            drop = rng.random() < ((0.6 if is_slow else 0.05) if bias else 0.1)
            step = 0 if drop else int(rng.integers(1, STEPS + 1))  # step 0: never a logged step
            rows.append({"task_id": task, "step": step, "wv": max(0, step - 1), "outcome": "resolved",
                         "duration_s": round(dur, 1)})  # fmt: skip
    traj, steps = tmp / "t.jsonl", tmp / "s.jsonl"
    traj.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    steps.write_bytes(b"".join(orjson.dumps({"step": s}) + b"\n" for s in range(1, STEPS + 1)))
    return traj, steps, slow


def _report(cli, tmp: Path, bias: bool) -> tuple[dict, set[str]]:
    traj, steps, slow = _plant(tmp, bias)
    assert cli("import", "jsonl", str(traj), "--run", "r", "--kind", "train").exit_code == 0
    assert cli("import", "steps", str(steps), "--run", "r").exit_code == 0
    res = cli("train", "selection", "r", "--top", "40", "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout), slow


def test_planted_bias_is_recovered(cli, tmp_path: Path) -> None:
    r, slow = _report(cli, tmp_path, bias=True)
    assert r["generated"] == 640 and r["steps"] == STEPS
    q = r["by_duration"]
    assert len(q) == 4 and sum(b["generated"] for b in q) == 640
    # the two fast quartiles ~5% dropped, the two slow ones ~60%: within sampling error of the plant
    assert all(b["never_trained_pct"] < 12 for b in q[:2]) and all(45 < b["never_trained_pct"] < 75 for b in q[2:])
    assert r["chi2_p"] < 1e-10
    assert r["mean_duration_trained_s"] < 0.8 * r["mean_duration_generated_s"]  # the trained mix drifts fast
    top = [t["task_id"] for t in r["by_task"][:20]]
    assert len(set(top) & slow) >= 18  # the most dropped tasks are the slow ones
    assert r["spearman_duration_dropped"] > 0.7 and r["spearman_p"] < 1e-5
    human = cli("train", "selection", "r").stdout
    assert "by duration quartile" in human and "never trained" in human


def test_no_bias_when_drops_are_uniform(cli, tmp_path: Path) -> None:
    r, _ = _report(cli, tmp_path, bias=False)
    assert all(3 < b["never_trained_pct"] < 20 for b in r["by_duration"])
    assert r["chi2_p"] > 0.001
    assert abs(r["mean_duration_trained_s"] - r["mean_duration_generated_s"]) < 0.15 * r["mean_duration_generated_s"]


def test_no_step_log_is_bad_input(cli, tmp_path: Path) -> None:
    traj, _, _ = _plant(tmp_path, bias=True)
    assert cli("import", "jsonl", str(traj), "--run", "r", "--kind", "train").exit_code == 0
    res = cli("train", "selection", "r")
    assert res.exit_code == 2 and "no step log" in res.stderr

"""After a real `trialbook rerun` (Docker), `compare` and `plan` count only the current trials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def test_compare_and_plan_after_a_real_rerun(engine, cli, tmp_path: Path) -> None:
    runs, tasks = str(tmp_path / "runs"), "slow-solution,plain-bugfix"
    for agent in ("nop", "oracle"):
        res = cli("run", str(EXAMPLES), "--agent", agent, "--run", agent, "--tasks", tasks, "--runs-dir", runs)
        assert res.exit_code == 0, res.stderr
    # the oracle's slow solution runs past its budget at x1 (graded, unresolved), then passes at x2
    before = json.loads(cli("compare", "nop", "oracle", "--json").stdout)["comparisons"][0]
    assert (before["base_pct"], before["cand_pct"]) == (0.0, 50.0)
    res = cli("rerun", "oracle", "--where", "agent_timeout", "--timeout-multiplier", "2")
    assert res.exit_code == 0, res.stderr
    assert json.loads(cli("show", "oracle", "--json").stdout)["superseded"] == 1

    res = cli("compare", "nop", "oracle", "--json")
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)["comparisons"]
    # counting the superseded timeout too would make slow-solution 0.5 and the candidate 75%
    assert (row["tasks_paired"], row["cand_pct"], row["diff_pp"], row["wins"]) == (2, 100.0, 100.0, 2)
    res = cli("plan", "--tasks", "50", "--repeats", "1", "--effect", "10", "--from-run", "oracle", "--json")
    assert res.exit_code == 0, res.stderr
    plan = json.loads(res.stdout)
    # one current attempt per task, all resolved: no sampling variance at all
    assert plan["variance"]["sampling_k1"] == 0.0 and "1 attempt/task" in plan["source"]["detail"]

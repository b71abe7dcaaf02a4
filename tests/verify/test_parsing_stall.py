"""A trial's output never stalls the harness or another trial (docs/threat-model.md G16): beside an honest trial, at
concurrency 2, two cheats print lines of 200 KB and 20 KB shaped for the backtracking of the patterns the harness ran
over logs (attacks/parsing/long_lines.sh). Graded per test with swebench's markers, by swebench's pytest_options
parser (the task says it is psf/requests), whose `(.*?)\\[(.*)\\]` took minutes on such a test id with Python's engine.
Every trial's verifier phase stays within its usual seconds, the honest trial resolves on its first try, the cheats
lose, and `audit` reads the run's logs (the signatures' patterns) in seconds."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
LONG_LINES = Path(__file__).resolve().parent / "attacks" / "parsing" / "long_lines.sh"
MARKED_SH = """#!/bin/bash
cd /testbed
mkdir -p tests && cp /tests/test_*.py tests/
echo '>>>>> Start Test Output'
python3 -m pytest -rA -p no:cacheprovider tests/test_stats.py
rc=$?
echo '>>>>> End Test Output'
mkdir -p /logs/verifier
if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
# plain-bugfix's verifier phase takes a few seconds here; a line that backtracked held the GIL 30-100 s
VERIFIER_PHASE_S = 45.0


def _copy(tasks: Path, name: str, solve: str | None) -> None:
    task = tasks / name
    shutil.copytree(EXAMPLE, task)
    if solve is not None:
        (task / "solution" / "solve.sh").write_text(solve)
    (task / "tests" / "test.sh").write_text(MARKED_SH)
    toml = (task / "task.toml").read_text().replace('repo = "examples/stats"', 'repo = "psf/requests"')
    (task / "task.toml").write_text(toml.replace("[verifier]\ntimeout_sec = 60", "[verifier]\ntimeout_sec = 40"))


def test_long_crafted_lines_stall_neither_the_harness_nor_the_honest_trial(engine, cli, db, tmp_path):
    script = LONG_LINES.read_text()
    assert "SIZE = 200000\n" in script
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    _copy(tasks, "a-long-200k", script)
    _copy(tasks, "b-honest", None)
    _copy(tasks, "c-long-20k", script.replace("SIZE = 200000\n", "SIZE = 20000\n"))
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "stall", "--concurrency", "2",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    got = {t["task_id"]: t for t in trial_dicts(Ledger(db), "stall")}
    assert sorted(got) == ["a-long-200k", "b-honest", "c-long-20k"]
    for task, t in got.items():
        extra = t["extra"]
        assert extra["phase_s"]["verifier"] < VERIFIER_PHASE_S, (task, extra["phase_s"])
        assert extra["retries"] == 0 and extra["verifier"]["tries"] == 1, (task, extra["verifier"])
    honest = got["b-honest"]
    assert honest["outcome"] == "resolved" and honest["reward"] == 1.0
    assert got["a-long-200k"]["outcome"] == got["c-long-20k"]["outcome"] == "unresolved"
    t = time.monotonic()
    res = cli("audit", "stall", "--json")
    assert res.exit_code == 0, res.stderr
    assert time.monotonic() - t < 30.0

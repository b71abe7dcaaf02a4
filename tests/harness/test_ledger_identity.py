"""Two ledgers, one run name, at the same time: each touches only its own containers; a run being
executed cannot be replaced by any command (the lock is held in the ledger, where imports see it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def _slow_tasks(base: Path, seconds: int) -> Path:
    tasks = base / "tasks"
    shutil.copytree(EXAMPLE, tasks / "slow-fix")
    solve = tasks / "slow-fix" / "solution" / "solve.sh"
    solve.write_text(solve.read_text().replace("cd /testbed\n", f"cd /testbed\nsleep {seconds}\n", 1))
    return tasks


def _containers(engine, run: str, ledger: str) -> list[str]:
    labels = [f"trialbook.run={run}", f"trialbook.ledger={ledger}"]
    return [c["Id"] for c in engine.api.containers(all=True, filters={"label": labels})]


def _wait_for(predicate, timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError("timed out waiting")


def test_two_ledgers_same_run_name_do_not_touch_each_other(engine, tmp_path, cli, db):
    tasks = _slow_tasks(tmp_path, 30)  # A's agent is alive through all the checks below, even under load
    db_a = str(tmp_path / "a.db")
    run = "same-name"
    # ledger B (the `cli` fixture's) has a finished run of the same name
    res = cli("run", str(tasks), "--agent", "nop", "--run", run, "--runs-dir", str(tmp_path / "runsB"))
    assert res.exit_code == 0, res.stderr
    id_a, id_b = Ledger(db_a).id, Ledger(db).id
    assert id_a != id_b
    live = subprocess.Popen(
        [*CLI, "run", str(tasks), "--agent", "oracle", "--run", run, "--db", db_a,
         "--runs-dir", str(tmp_path / "runsA")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # A's agent container, and with the warm pool its verifier's, waiting (same run and ledger labels)
        _wait_for(lambda: len(_containers(engine, run, id_a)) >= 1)
        live_boxes = _containers(engine, run, id_a)
        # resume and clean through ledger B: A's live container is not B's leftover
        res = cli("resume", run)
        assert res.exit_code == 0, res.stderr
        assert "removed 0 leftover" in res.stderr
        res = cli("clean", "--run", run)
        assert res.exit_code == 0 and "removed 0 container" in res.stderr, res.stderr
        # B's resume and clean left it alone (inspect raises NotFound once a container is gone)
        assert all(engine.api.inspect_container(box)["State"]["Running"] for box in live_boxes)
        # --replace of A's live run: refused by run (other runs-dir, so no shared lock file) and by imports
        jsonl = tmp_path / "t.jsonl"
        jsonl.write_text(json.dumps({"task_id": "slow-fix", "attempt": 0, "outcome": "resolved", "reward": 1.0}) + "\n")
        for args in (
            ["import", "jsonl", str(jsonl), "--run", run, "--replace"],
            ["run", str(tasks), "--agent", "nop", "--run", run, "--replace", "--runs-dir", str(tmp_path / "runsC")],
        ):
            proc = subprocess.run([*CLI, *args, "--db", db_a], capture_output=True, text=True, timeout=120)
            assert proc.returncode == 2, (args, proc.stderr)
            assert "is being executed by another process" in proc.stderr and proc.stderr.count("\n") == 1
        out, err = live.communicate(timeout=180)
    finally:
        if live.poll() is None:
            live.kill()
            live.wait()
    assert live.returncode == 0, err
    ledger_a = Ledger(db_a)
    got = trial_dicts(ledger_a, run)
    assert [(t["task_id"], t["attempt"], t["outcome"]) for t in got] == [("slow-fix", 0, "resolved")]
    ledger_b = Ledger(db)
    assert [t["outcome"] for t in trial_dicts(ledger_b, run)] == ["unresolved"]
    assert _containers(engine, run, id_a) == [] and _containers(engine, run, id_b) == []
    # once A is done, its run can be replaced again
    proc = subprocess.run([*CLI, "import", "jsonl", str(jsonl), "--run", run, "--replace", "--db", db_a],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr

"""The exit-code contract through the real `trialbook` entry point: a runtime failure exits 1 with one
line on stderr (no traceback), bad input exits 2, and neither prints to stdout."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

MAIN = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def trialbook(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MAIN, *args], capture_output=True, text=True, timeout=120)


def _one_line_error(res: subprocess.CompletedProcess[str], code: int, text: str) -> None:
    assert res.returncode == code, (res.returncode, res.stderr)
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: ") and text in res.stderr, res.stderr
    assert "Traceback" not in res.stderr


def _ledger_with_a_run(tmp_path: Path, rows: list[dict], *kind: str) -> str:
    db, path = str(tmp_path / "ledger.db"), tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert trialbook("import", "jsonl", str(path), "--run", "r", *kind, "--db", db).returncode == 0
    return db


def test_a_ledger_from_a_newer_trialbook_is_a_runtime_failure(tmp_path: Path) -> None:
    db = _ledger_with_a_run(tmp_path, [{"task_id": "a__b-1", "resolved": True}])
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    _one_line_error(trialbook("runs", "--db", db), 1, "ledger schema v999 is newer than this trialbook")


def test_an_outcome_this_version_does_not_know_is_a_runtime_failure(tmp_path: Path) -> None:
    db = _ledger_with_a_run(tmp_path, [{"task_id": "a__b-1", "step": 1, "wv": 0, "reward": 1.0}], "--kind", "train")
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE trials SET outcome = 'teleported'")
    _one_line_error(trialbook("train", "report", "r", "--db", db), 1, "an outcome this version of trialbook")


def test_bad_input_is_exit_2_not_1(tmp_path: Path) -> None:
    db = _ledger_with_a_run(tmp_path, [{"task_id": "a__b-1", "resolved": True}])
    _one_line_error(trialbook("show", "ghost", "--db", db), 2, "no run named 'ghost'")

"""`runs`/`show` on a SQLite ledger read it through stdlib sqlite3 (ledger/lite.py) with the SQL text that
ledger/sqlite_reads.py caches; that text is generated from the SQLAlchemy statements, so it cannot drift."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from trialbook.ledger import reads, schema, sqlite_reads, statements
from trialbook.ledger.lite import LiteLedger, open_reads
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.stats.run_summaries import run_summary, runs_summary

ROWS = [
    {"task_id": "o__r-1", "repo": "o/r", "outcome": "resolved"},
    {"task_id": "o__r-1", "repo": "o/r", "outcome": "unresolved", "exception": "AssertionError"},
    {"task_id": "o__r-2", "repo": "o/r", "reward": 0.5},
    {"task_id": "o__r-2", "repo": "o/r", "outcome": "infra_error", "exception": "DockerError"},
    {"task_id": "p__q-1", "outcome": "agent_timeout", "exception": "AgentTimeoutError"},
    {"task_id": "p__q-1", "outcome": "verifier_timeout"},
]


def test_the_cached_sqlite_text_is_what_the_statements_compile_to() -> None:
    fresh = statements.sqlite_sql()
    assert fresh == sqlite_reads.SQL, "ledger/sqlite_reads.py is stale: run `python -m trialbook.ledger.statements`"
    assert sqlite_reads.SCHEMA_VERSION == schema.SCHEMA_VERSION
    assert Path(sqlite_reads.__file__).read_text() == statements.render_module()
    assert set(fresh) == set(statements.STATEMENTS) and "task_scores" in fresh


def _ledger(cli, tmp_path: Path, db: str) -> None:
    twice = [{"task_id": t, "outcome": o} for t, o in (("x__y-1", "resolved"), ("x__y-1", "unresolved"),
                                                       ("x__y-2", "resolved"), ("x__y-2", "resolved"))]  # fmt: skip
    for name, rows in (("a", ROWS), ("b", ROWS[:3]), ("k", twice)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        assert cli("import", "jsonl", str(path), "--run", name).exit_code == 0
    path = tmp_path / "again.jsonl"  # a rerun of one trial: the first becomes superseded
    path.write_text(json.dumps({"task_id": "o__r-2", "attempt": 0, "repo": "o/r", "outcome": "resolved"}) + "\n")
    ledger = Ledger(db)
    with ledger.transaction() as conn:  # a run without trials (and with a stack and labels)
        ledger.create_run(conn, Run(name="empty", stack={"agent": "x"}, labels={"seed": 1}, source="here"))
    old = next(t.id for t in ledger.trial_rows(ledger.get_run("a").id) if t.task_id == "o__r-2" and t.attempt == 0)
    with ledger.transaction() as conn:
        ledger.record_trial(conn, (ledger.get_run("a").id, "o__r-2", 0, "o/r", "resolved", 1.0,
                                   *[None] * 13), supersedes=old)  # fmt: skip


def test_both_readers_give_the_same_rows_and_summaries(cli, tmp_path: Path, db: str) -> None:
    _ledger(cli, tmp_path, db)
    full, lite = Ledger(db), open_reads(db)
    assert isinstance(lite, LiteLedger)
    for name in ("a", "b", "k", "empty"):
        run = reads.get_run(full, name)
        assert reads.get_run(lite, name) == run
        assert reads.run_breakdown(lite, run.id) == reads.run_breakdown(full, run.id)
        assert reads.task_scores(lite, run.id) == reads.task_scores(full, run.id)
        assert run_summary(lite, name) == run_summary(full, name)
    assert reads.runs_with_counts(lite) == reads.runs_with_counts(full)
    assert runs_summary(lite) == runs_summary(full)
    shown = run_summary(lite, "a")
    # current: o__r-1 resolved + unresolved, o__r-2 resolved (the rerun) + infra_error, p__q-1 agent_timeout
    # (graded) + verifier_timeout
    assert (shown.superseded, shown.trials, shown.judged, shown.resolved) == (1, 6, 4, 2)
    assert shown.tags == {"AgentTimeoutError": 1, "AssertionError": 1, "DockerError": 1}
    assert shown.pass_at_k is None  # graded attempts per task 2, 1, 1: typically 1
    assert run_summary(lite, "k").pass_at_k == {"pass@1": 75.0, "pass@2": 100.0, "pass^2": 50.0}


def test_other_ledgers_open_through_sqlalchemy(cli, tmp_path: Path, db: str) -> None:
    _ledger(cli, tmp_path, db)
    assert isinstance(open_reads(f"sqlite:///{db}"), LiteLedger)  # the URL form of a path too
    with sqlite3.connect(db) as conn:  # a ledger one version older: the full Ledger migrates it
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION - 1),))
    assert LiteLedger.open(Path(db)) is None
    assert isinstance(open_reads(db), Ledger)
    assert isinstance(open_reads(db), LiteLedger)  # ... after which it reads without SQLAlchemy again


CODE = """
import json, sys
sys.argv = ["trialbook", *json.loads(sys.argv[1])]
from trialbook.cli import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("args", [["runs"], ["show", "a"], ["show", "b", "--json"], ["runs", "--csv"]])
def test_runs_and_show_import_neither_sqlalchemy_nor_numpy(cli, tmp_path: Path, db: str, args) -> None:
    _ledger(cli, tmp_path, db)
    proc = subprocess.run([sys.executable, "-c", CODE, json.dumps([*args, "--db", db])], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stderr.split("MODULES ", 1)[1])
    assert [m for m in loaded if m.split(".")[0] in ("sqlalchemy", "numpy")] == []
    assert "a" in proc.stdout


def test_a_failed_read_is_one_line(cli, tmp_path: Path, db: str) -> None:
    _ledger(cli, tmp_path, db)
    with sqlite3.connect(db) as conn:  # damaged: the trials table is gone, the schema version is current
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("ALTER TABLE trials RENAME TO lost")
    main = "import sys; from trialbook.cli import main; sys.argv[0] = 'trialbook'; main()"
    proc = subprocess.run([sys.executable, "-c", main, "runs", "--db", db], capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == "error: ledger read failed: no such table: trials\n"

"""Schema v3 -> v4 (issue 16): the covering indexes arrive in one transaction, and the page queries use them;
v4 -> v5: run_tasks, filled for the runs already there."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import event

from trialbook.errors import UserError
from trialbook.ledger import schema, views
from trialbook.ledger.store import Ledger

NEW = sorted(i.name for i in schema.SUMMARY_INDEXES)


def _indexes(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'"))


def _version(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])


def _v3_ledger(cli, db: str, tmp_path: Path) -> Path:
    """A ledger with trials, as trialbook left it at schema v3 (before SUMMARY_INDEXES existed)."""
    rows = tmp_path / "t.jsonl"
    outcomes = ["resolved", "unresolved", "agent_timeout", "verifier_timeout"]
    rows.write_text("".join(json.dumps({"task_id": f"o__r-{i % 7}", "outcome": outcomes[i % 4]}) + "\n"
                            for i in range(40)))  # fmt: skip
    assert cli("import", "jsonl", str(rows), "--run", "old").exit_code == 0
    with sqlite3.connect(db) as conn:
        for name in NEW:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("DROP TABLE run_summary")
        conn.execute("DROP TABLE run_stats")
        conn.execute("DROP TABLE run_tasks")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    assert _version(Path(db)) == 3 and not set(NEW) & set(_indexes(Path(db)))
    return Path(db)


def test_v3_ledger_migrates_to_v4_with_its_trials(cli, db: str, tmp_path: Path) -> None:
    path = _v3_ledger(cli, db, tmp_path)
    with pytest.raises(UserError, match="schema v3.*run any trialbook command on it once"):
        views.open_readonly(db)  # serve never migrates
    assert cli("runs").exit_code == 0  # any writing-capable command upgrades it
    assert _version(path) == schema.SCHEMA_VERSION == 6
    assert set(NEW) <= set(_indexes(path))
    overview = views.run_overview(views.open_readonly(db), "old")
    assert (overview.counts.trials, overview.tasks, overview.outcomes["resolved"]) == (40, 7, 10)


def test_failed_migration_leaves_the_v3_ledger_as_it_was(cli, db: str, tmp_path: Path) -> None:
    path = _v3_ledger(cli, db, tmp_path)
    with sqlite3.connect(path) as conn:  # a stray run_stats table: the upgrade fails when it fills the summaries
        conn.execute("CREATE TABLE run_stats (x INTEGER)")
    with pytest.raises(UserError, match="cannot open ledger"):
        Ledger(db)
    assert _version(path) == 3
    assert not set(NEW) & set(_indexes(path))  # the index, created before the failure, was rolled back
    with sqlite3.connect(path) as conn:
        assert not conn.execute("SELECT name FROM sqlite_master WHERE name = 'run_summary'").fetchall()
        conn.execute("DROP TABLE run_stats")
    Ledger(db)
    assert _version(path) == schema.SCHEMA_VERSION and set(NEW) <= set(_indexes(path))


def test_page_queries_read_summaries_and_indexes_not_trial_rows(cli, db: str, tmp_path: Path) -> None:
    """With the summaries stored, every query the runs and run pages make on `trials` is an index seek."""
    _v3_ledger(cli, db, tmp_path)
    Ledger(db)
    ledger = views.open_readonly(db)
    seen: list[tuple[str, object]] = []
    event.listen(ledger.engine, "before_cursor_execute", lambda c, cur, sql, params, *a: seen.append((sql, params)))
    run = views.run_by_name(ledger, "old")
    views.run_counts(ledger, [run.id])
    views.run_overview(ledger, "old")
    views.run_version(ledger, run.id)
    on_trials = [(sql, p) for sql, p in seen if "FROM trials" in sql]
    assert len(on_trials) >= 3
    with ledger.engine.connect() as conn:
        for sql, params in on_trials:
            plan = [r[-1] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, tuple(params))]
            trial_steps = [p for p in plan if "trials" in p]
            assert trial_steps and all("COVERING INDEX" in p for p in trial_steps), (sql, plan)


def test_v4_ledger_migrates_to_v5_with_run_tasks_filled(cli, db: str, tmp_path: Path) -> None:
    rows = tmp_path / "t.jsonl"
    rows.write_text("".join(json.dumps({"task_id": f"o__r-{i % 7}", "outcome": "resolved"}) + "\n" for i in range(40)))
    assert cli("import", "jsonl", str(rows), "--run", "old").exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE run_tasks")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    assert cli("runs").exit_code == 0
    assert _version(Path(db)) == 6
    with sqlite3.connect(db) as conn:
        per_task = dict(conn.execute("SELECT task_id, trials FROM run_tasks ORDER BY task_id").fetchall())
        tasks = conn.execute("SELECT tasks FROM run_stats").fetchone()[0]
    assert per_task == {f"o__r-{i}": 6 if i < 5 else 5 for i in range(7)} and tasks == 7

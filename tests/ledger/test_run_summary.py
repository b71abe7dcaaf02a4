"""Per-run summaries (ledger/summary.py): written with every transaction, exact, and never trusted stale."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from trialbook.ledger import views
from trialbook.ledger.schema import TRIAL_COLUMNS
from trialbook.ledger.store import Ledger


def _import(cli, tmp_path: Path, run: str, outcomes: list[str], *extra: str) -> None:
    src = tmp_path / f"{run}.jsonl"
    rows = [{"task_id": f"o__r-{i % 3}", "outcome": o} for i, o in enumerate(outcomes)]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(src), "--run", run, *extra).exit_code == 0


def _stats(db: str) -> dict[int, tuple]:
    with sqlite3.connect(db) as conn:
        return {r[0]: r[1:4] for r in conn.execute("SELECT run_id, top_id, superseded, tasks FROM run_stats")}


def test_summary_follows_imports_reruns_and_replaces(cli, db: str, tmp_path: Path) -> None:
    _import(cli, tmp_path, "a", ["resolved", "unresolved", "agent_timeout", "resolved"])
    ledger = Ledger(db)
    run = views.run_by_name(ledger, "a")
    assert _stats(db) == {run.id: (4, 0, 3)}
    ro = views.open_readonly(db)
    assert views.run_counts(ro, [run.id])[run.id] == views.TrialCounts(4, 4, 2)

    row = dict.fromkeys(TRIAL_COLUMNS)
    row.update(run_id=run.id, task_id="o__r-1", attempt=1, outcome="resolved", reward=1.0)
    with ledger.transaction() as conn:  # a rerun of trial 2 (unresolved) that resolves it
        ledger.record_trial(conn, tuple(row.values()), supersedes=2)
    assert _stats(db) == {run.id: (5, 1, 3)}
    o = views.run_overview(ro, "a")
    assert (o.counts, o.superseded, o.outcomes) == (
        views.TrialCounts(4, 4, 3), 1, {"resolved": 3, "agent_timeout": 1}
    )

    _import(cli, tmp_path, "a", ["unresolved"], "--replace")
    new = views.run_by_name(ledger, "a")
    assert _stats(db)[new.id][1:] == (0, 1)  # (SQLite may reuse the deleted ids: the old summary went with its run)
    assert views.run_counts(ro, [new.id])[new.id] == views.TrialCounts(1, 1, 0)


def test_a_stale_summary_is_never_shown(cli, db: str, tmp_path: Path) -> None:
    """A writer that bypasses Ledger.transaction (an older trialbook): the page counts live instead."""
    _import(cli, tmp_path, "a", ["resolved", "unresolved"])
    run = views.run_by_name(Ledger(db), "a")
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO trials (run_id, task_id, attempt, outcome, reward) VALUES (?, 'o__r-9', 0, 'resolved', 1.0)",
            (run.id,),
        )
        conn.execute("UPDATE trials SET superseded_by = 3 WHERE id = 2")
    ro = views.open_readonly(db)
    assert views.run_counts(ro, [run.id])[run.id] == views.TrialCounts(2, 2, 2)
    o = views.run_overview(ro, "a")
    assert (o.tasks, o.superseded, o.outcomes) == (2, 1, {"resolved": 2})
    assert _stats(db)[run.id] == (2, 0, 2)  # still the old one: the server never writes

"""Per-run summaries (ledger/summary_cache.py): written with every transaction, exact, and never trusted stale."""

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
    assert (o.counts, o.superseded, o.outcomes) == (views.TrialCounts(4, 4, 3), 1, {"resolved": 3, "agent_timeout": 1})

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


# ---- the incremental path (summary.catch_up) against a recount, over random histories ----------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from trialbook.ledger import summary_cache as summary  # noqa: E402

OUTCOMES = ["resolved", "unresolved", "agent_timeout", "infra_error"]
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("trial"),
            st.integers(0, 5),
            st.sampled_from(OUTCOMES),
            st.sampled_from([None, "r1", "r2"]),
            st.sampled_from([None, "E"]),
            st.booleans(),
        ),  # fmt: skip
        st.tuples(st.just("rerun"), st.integers(0, 40), st.sampled_from(OUTCOMES)),
        st.tuples(st.just("import"), st.integers(1, 4), st.booleans()),
        st.tuples(
            st.just("run"),
        ),
    ),
    min_size=1,
    max_size=25,
)


def _stored(conn) -> dict[str, list]:
    """The stored summaries, read through `conn` (a sqlite3 or SQLAlchemy connection)."""
    run = conn.execute if isinstance(conn, sqlite3.Connection) else conn.exec_driver_sql
    return {
        "cells": sorted(
            run("SELECT run_id, outcome, repo, exception, trials, resolved FROM run_summary").fetchall(), key=repr
        ),  # fmt: skip
        "tasks": sorted(run("SELECT run_id, task_id, trials FROM run_tasks").fetchall()),
        "stats": sorted(run("SELECT run_id, top_id, superseded, tasks FROM run_stats").fetchall()),
    }


def _recounted(ledger: Ledger) -> dict[str, list]:
    """Every run's summary recomputed from all its rows (summary.recompute), then rolled back."""
    with ledger.engine.connect() as conn:
        assert summary.stale_runs(conn) == []
        for run_id, top, sup in conn.exec_driver_sql(
            "SELECT runs.id, (SELECT max(id) FROM trials WHERE run_id = runs.id),"
            " (SELECT count(*) FROM trials WHERE run_id = runs.id AND superseded_by IS NOT NULL) FROM runs"
        ).all():
            summary.recompute(conn, run_id, top, int(sup))
        out = _stored(conn)
        conn.rollback()
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_the_summary_kept_by_catch_up_equals_a_recount(tmp_path_factory, ops) -> None:
    db = str(tmp_path_factory.mktemp("sum") / "l.db")
    ledger = Ledger(db)
    from trialbook.records import Run

    with ledger.transaction() as conn:
        run_ids = [ledger.create_run(conn, Run(name="r0", config={}))]
    for op in ops:
        with ledger.transaction() as conn:
            run_id = run_ids[-1]
            row = dict.fromkeys(TRIAL_COLUMNS)
            if op[0] == "run":
                run_ids.append(ledger.create_run(conn, Run(name=f"r{len(run_ids)}", config={})))
            elif op[0] == "trial":
                _, task, outcome, repo, exc, resolved = op
                row.update(run_id=run_id, task_id=f"t{task}", attempt=0, outcome=outcome, repo=repo, exception=exc,
                           reward=1.0 if resolved else 0.0)  # fmt: skip
                ledger.record_trial(conn, tuple(row.values()))
            elif op[0] == "rerun":  # a current trial of the run, superseded by a new one of its task
                current = conn.exec_driver_sql(
                    "SELECT id, task_id FROM trials WHERE run_id = ? AND superseded_by IS NULL ORDER BY id", (run_id,)
                ).all()
                if current:
                    old, task = current[op[1] % len(current)]
                    row.update(run_id=run_id, task_id=task, attempt=1, outcome=op[2], reward=1.0)
                    ledger.record_trial(conn, tuple(row.values()), supersedes=old)
            else:  # an import's bulk rows; an older row then marked superseded by the oldest (summary recomputed)
                _, n, backwards = op
                rows = []
                for i in range(n):
                    row.update(run_id=run_id, task_id=f"t{i}", attempt=2, outcome="resolved", reward=1.0)
                    rows.append(tuple(row.values()))
                ledger.insert_trials(conn, rows)
                if backwards:
                    conn.exec_driver_sql(
                        "UPDATE trials SET superseded_by = (SELECT min(id) FROM trials) WHERE id = (SELECT min(id)"
                        " FROM trials WHERE run_id = ? AND superseded_by IS NULL)", (run_id,)
                    )  # fmt: skip
        with sqlite3.connect(db) as conn:
            kept = _stored(conn)
        assert kept == _recounted(ledger), op

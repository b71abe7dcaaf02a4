"""Per-run summary numbers, computed once in SQL by the writer and read by `trialbook serve`.

`run_summary` holds a run's current trials counted by (outcome, repo, exception) with how many have
reward >= 1; `run_stats` its superseded count and distinct tasks, and the run's *fingerprint* when
they were computed: its highest trial id and its superseded count. Trials are only ever inserted
(new ids), marked superseded, or deleted with their run, and a trial's `extra` (the one other
column updated in place) is not counted here; so a summary whose fingerprint equals the run's
live one (two index seeks) is exact, and one that differs is recomputed (`refresh`, at the end of
every `Ledger.transaction`) or, by a reader, not used (ledger/views.py counts live instead).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, func, select, text

from trialbook.ledger.schema import run_stats, run_summary, runs, trials
from trialbook.ledger.statements import current as _current
from trialbook.ledger.statements import sum_if


def live_fingerprint(run_id: Any) -> tuple[Any, Any]:
    """Scalar subqueries for a run's (highest trial id, superseded trials): index seeks, no scan."""
    top = select(func.max(trials.c.id)).where(trials.c.run_id == run_id).scalar_subquery()
    sup = (
        select(func.count())
        .where(trials.c.run_id == run_id, trials.c.superseded_by.is_not(None))
        .scalar_subquery()
    )
    return top, sup


def stale_runs(conn: Connection) -> list[tuple[int, int | None, int]]:
    """Runs whose stored summary is missing or differs from their live fingerprint: (id, top, superseded)."""
    top, sup = live_fingerprint(runs.c.id)
    q = select(runs.c.id, top.label("top"), sup.label("sup"), run_stats.c.top_id, run_stats.c.superseded).select_from(
        runs.outerjoin(run_stats, run_stats.c.run_id == runs.c.id)
    )
    out = []
    for run_id, live_top, live_sup, stored_top, stored_sup in conn.execute(q):
        if stored_sup is None or (live_top, int(live_sup)) != (stored_top, int(stored_sup)):
            out.append((int(run_id), live_top, int(live_sup)))
    return out


def refresh(conn: Connection) -> int:
    """Recompute the summary of every stale run inside the caller's transaction; returns how many.

    One grouped pass over the run's rows (their JSON columns are not read), once per change."""
    if conn.dialect.name == "postgresql":  # two writers refreshing one run would clash on run_stats' key
        conn.execute(text("SELECT pg_advisory_xact_lock(7355609)"))
    stale = stale_runs(conn)
    for run_id, top, superseded in stale:
        conn.execute(run_summary.delete().where(run_summary.c.run_id == run_id))
        conn.execute(run_stats.delete().where(run_stats.c.run_id == run_id))
        resolved = sum_if(trials.c.reward >= 1.0)
        key = (trials.c.task_id, trials.c.outcome, trials.c.repo, trials.c.exception)
        # one pass, grouped by task too (a few thousand rows): the distinct tasks come from the same rows
        q = select(*key, func.count(), resolved).where(trials.c.run_id == run_id, _current).group_by(*key)
        cells: dict[tuple[Any, ...], list[int]] = {}
        tasks: set[str] = set()
        for task_id, outcome, repo, exception, n, n_resolved in conn.execute(q):
            tasks.add(task_id)
            cell = cells.setdefault((outcome, repo, exception), [0, 0])
            cell[0] += int(n)
            cell[1] += int(n_resolved)
        if cells:
            conn.execute(
                run_summary.insert(),
                [{"run_id": run_id, "outcome": o, "repo": r, "exception": e, "trials": n, "resolved": k}
                 for (o, r, e), (n, k) in cells.items()],
            )  # fmt: skip
        conn.execute(
            run_stats.insert().values(
                run_id=run_id, top_id=top, superseded=superseded, tasks=len(tasks),
                computed=datetime.now(UTC).isoformat(timespec="seconds"),
            )
        )  # fmt: skip
    return len(stale)

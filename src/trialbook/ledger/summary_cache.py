"""Per-run summary numbers, computed once in SQL by the writer and read by `trialbook serve`.

`run_summary` holds a run's current trials counted by (outcome, repo, exception) with how many have
reward >= 1; `run_stats` its superseded count and distinct tasks, and the run's *fingerprint* when
they were computed: its highest trial id and its superseded count. Trials are only ever inserted
(new ids), marked superseded, or deleted with their run, and a trial's `extra` (the one other
column updated in place) is not counted here; so a summary whose fingerprint equals the run's
live one (two index seeks) is exact, and one that differs is brought up to date (`refresh`, at the end of
every `Ledger.transaction`: from the rows changed since, or by a pass over all of them) or, by a reader, not
used (ledger/views.py counts live instead). `run_tasks` keeps each run's current trials per task, so that the
distinct-task count follows a new trial by one key seek.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, text

from trialbook.ledger.schema import run_stats, run_summary, run_tasks, runs, trials
from trialbook.ledger.statements import current as _current
from trialbook.ledger.statements import sum_if


def live_fingerprint(run_id: Any) -> tuple[Any, Any]:
    """Scalar subqueries for a run's (highest trial id, superseded trials): index seeks, no scan."""
    top = select(func.max(trials.c.id)).where(trials.c.run_id == run_id).scalar_subquery()
    sup = select(func.count()).where(trials.c.run_id == run_id, trials.c.superseded_by.is_not(None)).scalar_subquery()
    return top, sup


def stale_runs(conn: Connection) -> list[tuple[int, int | None, int, tuple[int | None, int, int] | None]]:
    """Runs whose stored summary is missing or differs from their live fingerprint: (id, top, superseded, the stored
    (top id, superseded, tasks) or None when there is none)."""
    top, sup = live_fingerprint(runs.c.id)
    q = select(
        runs.c.id, top.label("top"), sup.label("sup"), run_stats.c.top_id, run_stats.c.superseded, run_stats.c.tasks
    ).select_from(runs.outerjoin(run_stats, run_stats.c.run_id == runs.c.id))
    out = []
    for run_id, live_top, live_sup, stored_top, stored_sup, tasks in conn.execute(q):
        if stored_sup is None or (live_top, int(live_sup)) != (stored_top, int(stored_sup)):
            stored = None if stored_sup is None else (stored_top, int(stored_sup), int(tasks))
            out.append((int(run_id), live_top, int(live_sup), stored))
    return out


def refresh(conn: Connection) -> int:
    """Bring the summary of every stale run up to date inside the caller's transaction; returns how many.

    A run whose rows since its stored fingerprint are all there is to count (catch_up: the usual case, a trial
    recorded or superseded) is updated from those rows alone, by index seeks; any other (no summary yet, an
    import that marked rows superseded by older ones) is recomputed in one grouped pass over its rows."""
    if conn.dialect.name == "postgresql":  # two writers refreshing one run would clash on run_stats' key
        conn.execute(text("SELECT pg_advisory_xact_lock(7355609)"))
    stale = stale_runs(conn)
    for run_id, top, superseded, stored in stale:
        if stored is None or not catch_up(conn, run_id, stored, top, superseded):
            recompute(conn, run_id, top, superseded)
    return len(stale)


_KEY = (trials.c.outcome, trials.c.repo, trials.c.exception)


def recompute(conn: Connection, run_id: int, top: int | None, superseded: int) -> None:
    """A run's summary from all its current rows: one pass, grouped by task too (the distinct tasks and run_tasks
    come from the same rows)."""
    _drop(conn, run_id)
    resolved = sum_if(trials.c.reward >= 1.0)
    q = select(trials.c.task_id, *_KEY, func.count(), resolved).where(trials.c.run_id == run_id, _current)
    cells: dict[tuple[Any, ...], list[int]] = {}
    per_task: dict[str, int] = {}
    for task_id, outcome, repo, exception, n, n_resolved in conn.execute(q.group_by(trials.c.task_id, *_KEY)):
        per_task[task_id] = per_task.get(task_id, 0) + int(n)
        cell = cells.setdefault((outcome, repo, exception), [0, 0])
        cell[0] += int(n)
        cell[1] += int(n_resolved)
    if cells:
        conn.execute(
            run_summary.insert(),
            [{"run_id": run_id, "outcome": o, "repo": r, "exception": e, "trials": n, "resolved": k}
             for (o, r, e), (n, k) in cells.items()],
        )  # fmt: skip
        conn.execute(run_tasks.insert(), [{"run_id": run_id, "task_id": t, "trials": n} for t, n in per_task.items()])
    _store(conn, run_id, top, superseded, len(per_task))


def catch_up(
    conn: Connection, run_id: int, stored: tuple[int | None, int, int], top: int | None, superseded: int
) -> bool:
    """Update a run's stored summary from the rows that changed since it was computed; False (nothing done) when
    those cannot be told apart.

    Trial ids only grow within a run, and a row is marked superseded once, by a row recorded after it
    (Ledger.record_trial): so since the stored fingerprint (top id T, S superseded), the rows added are those
    with id > T, and the rows superseded since are those with superseded_by > T, which were current then when
    their id is <= T. The live superseded count must then be S plus the latter's number, else an import marked
    rows in some other way and the run is recomputed."""
    base, stored_sup, tasks = stored[0] or 0, stored[1], stored[2]
    if top is None or top < base:
        return False
    gone = conn.execute(_GONE, {"run": run_id, "base": base}).all()
    if stored_sup + len(gone) != superseded:
        return False
    added = conn.execute(_ADDED, {"run": run_id, "base": base}).all()
    dropped = [g for g in gone if g[0] <= base]
    cells: dict[tuple[Any, ...], list[int]] = {}
    per_task: dict[str, int] = {}
    for rows, sign in ((added, 1), (dropped, -1)):
        for _id, task_id, outcome, repo, exception, reward in rows:
            cell = cells.setdefault((outcome, repo, exception), [0, 0])
            cell[0] += sign
            cell[1] += sign * (reward is not None and reward >= 1.0)
            per_task[task_id] = per_task.get(task_id, 0) + sign
    for (outcome, repo, exception), (n, k) in cells.items():
        key = {"run": run_id, "o": outcome, "r": repo, "e": exception, "dn": n, "dk": k}
        if (n or k) and conn.execute(_CELL_ADD, key).rowcount == 0:
            conn.execute(_CELL_NEW, key)
    for task_id, n in per_task.items():
        if not n:
            continue
        key = {"run": run_id, "t": task_id, "dn": n}
        had = conn.execute(_TASK_GET, key).scalar()
        conn.execute(_TASK_NEW if had is None else _TASK_ADD, key)
        tasks += ((had or 0) + n > 0) - ((had or 0) > 0)
    if dropped:  # counts went down: the cells and tasks left at 0 go
        conn.execute(run_summary.delete().where(run_summary.c.run_id == run_id, run_summary.c.trials <= 0))
        conn.execute(run_tasks.delete().where(run_tasks.c.run_id == run_id, run_tasks.c.trials <= 0))
    conn.execute(_STATS_SET, {"run": run_id, "top": top, "sup": superseded, "n_tasks": tasks, "at": _now()})
    return True


# catch_up's statements, built once (a trial's write runs them all; building them each time cost more than running)
_ROW = (trials.c.id, trials.c.task_id, *_KEY, trials.c.reward)
_GONE = select(*_ROW).where(trials.c.run_id == bindparam("run"), trials.c.superseded_by > bindparam("base"))
_ADDED = select(*_ROW).where(trials.c.run_id == bindparam("run"), trials.c.id > bindparam("base"), _current)
_CELL = (run_summary.c.run_id == bindparam("run"), run_summary.c.outcome == bindparam("o"),
         run_summary.c.repo.is_not_distinct_from(bindparam("r")),
         run_summary.c.exception.is_not_distinct_from(bindparam("e")))  # fmt: skip
_CELL_ADD = (
    run_summary.update()
    .where(*_CELL)
    .values(trials=run_summary.c.trials + bindparam("dn"), resolved=run_summary.c.resolved + bindparam("dk"))
)
_CELL_NEW = run_summary.insert().values(
    run_id=bindparam("run"), outcome=bindparam("o"), repo=bindparam("r"), exception=bindparam("e"),
    trials=bindparam("dn"), resolved=bindparam("dk"),
)  # fmt: skip
_TASK = (run_tasks.c.run_id == bindparam("run"), run_tasks.c.task_id == bindparam("t"))
_TASK_GET = select(run_tasks.c.trials).where(*_TASK)
_TASK_ADD = run_tasks.update().where(*_TASK).values(trials=run_tasks.c.trials + bindparam("dn"))
_TASK_NEW = run_tasks.insert().values(run_id=bindparam("run"), task_id=bindparam("t"), trials=bindparam("dn"))
_STATS_SET = (
    run_stats.update()
    .where(run_stats.c.run_id == bindparam("run"))
    .values(top_id=bindparam("top"), superseded=bindparam("sup"), tasks=bindparam("n_tasks"), computed=bindparam("at"))
)


def _drop(conn: Connection, run_id: int) -> None:
    for table in (run_summary, run_stats, run_tasks):
        conn.execute(table.delete().where(table.c.run_id == run_id))


def _store(conn: Connection, run_id: int, top: int | None, superseded: int, tasks: int) -> None:
    conn.execute(
        run_stats.insert().values(run_id=run_id, top_id=top, superseded=superseded, tasks=tasks, computed=_now())
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")

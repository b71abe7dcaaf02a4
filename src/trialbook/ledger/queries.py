"""The ledger's read queries for reports, audits and statistics, each returning typed rows (ledger.rows).
(Those of `runs` and `show`, which also run without SQLAlchemy, are in ledger/statements.py and reads.py.)

Everything is computed in SQL (GROUP BY, not a Python loop over trials) so reports stay fast on
million-trial runs; "current" trials are those not superseded by a rerun.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, cast

import orjson
from sqlalchemy import ColumnClause, Connection, Select, case, func, literal_column, select

from trialbook.ledger import statements
from trialbook.ledger.reads import loads
from trialbook.ledger.rows import StepRow, TaskLists, TrajectoryGroup
from trialbook.ledger.schema import artifacts, steps, tasks, trials
from trialbook.ledger.store import Ledger
from trialbook.outcomes import FAIL_TO_PASS, NOT_PASSING, PASS_TO_PASS, Outcome

_current = statements.current


def run_task_ids(ledger: Ledger, run_id: int) -> set[str]:
    """The task ids of a run's current trials."""
    q = select(trials.c.task_id).distinct().where(trials.c.run_id == run_id, _current)
    with ledger.engine.connect() as conn:
        return set(conn.execute(q).scalars())


def task_lists(ledger: Ledger, ids: Iterable[str]) -> dict[str, TaskLists]:
    """F2P/P2P lists from the tasks table, for the tasks that have both."""
    out: dict[str, TaskLists] = {}
    wanted = sorted(set(ids))
    c = tasks.c
    with ledger.engine.connect() as conn:
        for start in range(0, len(wanted), 500):
            q = select(c.task_id, c.repo, c.fail_to_pass, c.pass_to_pass).where(
                c.task_id.in_(wanted[start : start + 500])
            )
            for task_id, repo, f2p, p2p in conn.execute(q):
                f2p, p2p = loads(f2p), loads(p2p)
                if f2p is not None and p2p is not None:
                    out[task_id] = TaskLists(repo, f2p, p2p)
    return out


def artifacts_of(ledger: Ledger, trial_ids: list[int], names: Iterable[str]) -> dict[int, dict[str, str]]:
    """Named artifacts of some trials in one query: {trial_id: {name: text}}."""
    q = select(artifacts.c.trial_id, artifacts.c.name, artifacts.c.content).where(
        artifacts.c.trial_id.in_(trial_ids), artifacts.c.name.in_(list(names))
    )
    out: dict[int, dict[str, str]] = {}
    with ledger.engine.connect() as conn:
        for trial_id, name, content in conn.execute(q):
            out.setdefault(trial_id, {})[name] = content
    return out


def count_artifacts(ledger: Ledger, run_id: int, names: Iterable[str]) -> int:
    """How many artifacts named one of `names` the run's current trials have."""
    current = select(trials.c.id).where(trials.c.run_id == run_id, _current)
    q = select(func.count()).where(artifacts.c.trial_id.in_(current), artifacts.c.name.in_(list(names)))
    with ledger.engine.connect() as conn:
        return int(conn.execute(q).scalar_one())


def _time(value: str | None) -> datetime | None:
    if value is None:
        return None
    ts = datetime.fromisoformat(value)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def step_rows(ledger: Ledger, run_id: int) -> list[StepRow]:
    """The run's optimizer steps in step order, metrics decoded, times as aware datetimes."""
    q = select(steps.c.step, steps.c.started_at, steps.c.finished_at, steps.c.metrics)
    q = q.where(steps.c.run_id == run_id).order_by(steps.c.step)
    with ledger.engine.connect() as conn:
        return [
            StepRow(step, _time(started), _time(finished), orjson.loads(metrics) if metrics else {})
            for step, started, finished, metrics in conn.execute(q)
        ]


def durations(ledger: Ledger, run_id: int) -> list[float]:
    """Durations (seconds) of the run's current trials that have one."""
    q = select(trials.c.duration_s).where(trials.c.run_id == run_id, _current, trials.c.duration_s.is_not(None))
    with ledger.engine.connect() as conn:
        return list(conn.execute(q).scalars())


# ---- training trajectories, grouped -------------------------------------------------------------

OUTCOME_LIST: tuple[str, ...] = tuple(o.value for o in Outcome)
# The `flags` column: outcome code in the low 4 bits, then "reward >= 1.0", "P2P regression",
# "partial reward (0 < reward < 1)".
OUTCOME_MASK = 0b1111
UNKNOWN_OUTCOME = 0b1111
REWARD_1 = 0b10000
P2P = 0b100000
PARTIAL = 0b1000000
CHUNK = 100_000


def p2p_regression_sql(is_sqlite: bool) -> str:
    """`outcomes.p2p_regression(trials.tests)` as an SQL boolean (SQLite JSON1 / PostgreSQL jsonpath).

    Some FAIL_TO_PASS test, none in NOT_PASSING, some PASS_TO_PASS test in it; both groups objects.
    """
    bad = ", ".join(f"'{s}'" for s in NOT_PASSING)
    if is_sqlite:

        def each(group: str, where: str = "") -> str:
            return f"SELECT 1 FROM json_each(trials.tests, '$.{group}'){where}"

        return (
            f"(trials.tests IS NOT NULL AND json_type(trials.tests, '$.{FAIL_TO_PASS}') = 'object'"
            f" AND json_type(trials.tests, '$.{PASS_TO_PASS}') = 'object'"
            f" AND EXISTS ({each(FAIL_TO_PASS)})"
            f" AND NOT EXISTS ({each(FAIL_TO_PASS, f' WHERE value IN ({bad})')})"
            f" AND EXISTS ({each(PASS_TO_PASS, f' WHERE value IN ({bad})')}))"
        )
    doc = "CAST(trials.tests AS jsonb)"
    status = " || ".join(f'@ == "{s}"' for s in NOT_PASSING)
    return (
        f"(trials.tests IS NOT NULL AND jsonb_typeof({doc} -> '{FAIL_TO_PASS}') = 'object'"
        f" AND jsonb_typeof({doc} -> '{PASS_TO_PASS}') = 'object'"
        f" AND jsonb_path_exists({doc}, '$.{FAIL_TO_PASS}.*')"
        f" AND NOT jsonb_path_exists({doc}, '$.{FAIL_TO_PASS}.* ? ({status})')"
        f" AND jsonb_path_exists({doc}, '$.{PASS_TO_PASS}.* ? ({status})'))"
    )


def _raw_chunks(conn: Connection, q: Select[Any]) -> Iterator[list[Any]]:
    """Plain DBAPI tuples for `q` in chunks: skips SQLAlchemy's per-row objects on the hot path."""
    # Literal values (our own ints and fixed strings): PostgreSQL then sees GROUP BY expressions
    # textually equal to the SELECT ones, which it requires.
    sql = str(q.compile(dialect=conn.dialect, compile_kwargs={"literal_binds": True}))
    cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cur.execute(sql)
        while rows := cur.fetchmany(CHUNK):
            yield cast("list[Any]", rows)  # sqlite3's and psycopg's fetchmany return a list
    finally:
        cur.close()


def trajectory_groups(ledger: Ledger, run_id: int, rewards: bool = False) -> Iterator[list[TrajectoryGroup]]:
    """A run's current trials grouped by (task, repo, flags, step, wv, epoch), in chunks of CHUNK rows.

    The G rollouts of one group mostly collapse into one row with its count, so a million
    trajectories come back as a few hundred thousand integer tuples. With `rewards`, each row also
    ends with the sum of its trials' rewards (a missing reward counts 0).
    """
    c = trials.c
    outcome_code = case({name: i for i, name in enumerate(OUTCOME_LIST)}, value=c.outcome, else_=UNKNOWN_OUTCOME)
    p2p: ColumnClause[Any] = literal_column(p2p_regression_sql(ledger.is_sqlite))
    flags = (
        outcome_code + case((c.reward >= 1.0, REWARD_1), (c.reward > 0.0, PARTIAL), else_=0) + case((p2p, P2P), else_=0)
    )
    key = (c.task_id, c.repo, flags, func.coalesce(c.step, -1), func.coalesce(c.wv, -1), func.coalesce(c.epoch, -1))
    sums = [func.sum(func.coalesce(c.reward, 0.0))] if rewards else []
    q = select(*key, func.count(), *sums).where(c.run_id == run_id, _current).group_by(*key)
    with ledger.engine.connect() as conn:
        if ledger.is_sqlite:  # memory-mapped reads make the full scan cheaper
            conn.exec_driver_sql("PRAGMA mmap_size=1073741824")
        yield from _raw_chunks(conn, q)

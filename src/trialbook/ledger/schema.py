"""Ledger tables (SQLAlchemy Core, portable between SQLite and PostgreSQL) and migrations.

Schema version lives in `meta`; `MIGRATIONS[n]` upgrades version n to n+1. Version 0 is an
empty database. Add a migration (never edit an old one) when the schema changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    inspect,
    select,
)

from trialbook.errors import TrialbookError

metadata = MetaData()

meta = Table(
    "meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("kind", String(16), nullable=False),
    Column("created", String(40), nullable=False),
    Column("config", Text, nullable=False, default="{}"),
    Column("stack", Text, nullable=False, default="{}"),
    Column("labels", Text, nullable=False, default="{}"),
    Column("source", Text),
)

tasks = Table(
    "tasks",
    metadata,
    Column("task_id", String(255), primary_key=True),
    Column("repo", String(255)),
    Column("instruction", Text),
    Column("image", Text),
    Column("verifier_hash", String(128)),
    Column("fail_to_pass", Text),
    Column("pass_to_pass", Text),
    Column("solution", Text),
)

# Column order here is the order importers pass positional rows in (see TRIAL_COLUMNS).
trials = Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("task_id", String(255), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("repo", String(255)),
    Column("outcome", String(32), nullable=False),
    Column("reward", Float),
    Column("step", Integer),
    Column("wv", Integer),
    Column("epoch", Integer),
    Column("exception", Text),
    Column("exception_message", Text),
    Column("duration_s", Float),
    Column("tokens", Integer),
    Column("turns", Integer),
    Column("tests", Text),
    Column("started_at", String(40)),
    Column("finished_at", String(40)),
    Column("extra", Text),
    Column("superseded_by", Integer),
)
# run_id only: imports append in run order, so this index stays cheap to maintain on bulk inserts.
Index("ix_trials_run", trials.c.run_id)
# v4: a partial index of the superseded trials only, which makes a run's superseded count
# (half of its summary's fingerprint, ledger/summary_cache.py) one seek answered by the index alone. An import's
# new rows are all current, so it costs an import nothing; covering indexes of every trial (by outcome,
# or by task) made a 1,000,000-trial import 45% and 100% slower (benchmarks/bench_import.py).
SUMMARY_INDEXES = (
    Index("ix_trials_superseded", trials.c.run_id, trials.c.superseded_by,
          sqlite_where=trials.c.superseded_by.is_not(None), postgresql_where=trials.c.superseded_by.is_not(None)),
)  # fmt: skip

# Named per-trial files (verifier log, report.json, trajectory) kept in the ledger itself.
artifacts = Table(
    "artifacts",
    metadata,
    Column("trial_id", Integer, ForeignKey("trials.id", ondelete="CASCADE"), primary_key=True),
    Column("name", String(128), primary_key=True),
    Column("content", Text, nullable=False),
)

# One row per optimizer step of a training run (`import steps`); metrics is a JSON object.
steps = Table(
    "steps",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("step", Integer, primary_key=True),
    Column("started_at", String(40)),
    Column("finished_at", String(40)),
    Column("metrics", Text),
)

# Which process is executing a run (ledger/locks.py): `--replace` of a live run is refused by every command.
run_locks = Table(
    "run_locks",
    metadata,
    Column("run", String(255), primary_key=True),
    Column("owner", String(255), nullable=False),
    Column("since", String(40), nullable=False),
)

# Preregistered plans (`prereg init`) and every `prereg check` made against one (ledger/plans.py).
plans = Table(
    "plans",
    metadata,
    Column("hash", String(80), primary_key=True),
    Column("content", Text, nullable=False),
    Column("registered", String(40), nullable=False),
)
plan_checks = Table(
    "plan_checks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("plan_hash", String(80), ForeignKey("plans.hash"), nullable=False),
    Column("checked_at", String(40), nullable=False),
    Column("base", String(255), nullable=False),
    Column("candidates", Text, nullable=False),  # JSON list of run names
    Column("result", Text, nullable=False),  # JSON: verdicts and the candidate count adjusted for
)

# v4: per-run summary numbers, computed once by the writer (ledger/summary_cache.py explains when
# they are exact); `serve` reads them instead of counting a million trials on every first visit.
run_summary = Table(
    "run_summary",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False, index=True),
    Column("outcome", String(32), nullable=False),
    Column("repo", String(255)),
    Column("exception", Text),
    Column("trials", Integer, nullable=False),  # current trials with this outcome, repo and exception
    Column("resolved", Integer, nullable=False),  # ... of which reward >= 1.0
)
run_stats = Table(
    "run_stats",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("top_id", Integer),  # fingerprint: the run's highest trial id (None: no trials) ...
    Column("superseded", Integer, nullable=False),  # ... and its superseded trials
    Column("tasks", Integer, nullable=False),  # distinct tasks of its current trials
    Column("computed", String(40), nullable=False),
)
# v5: a run's current trials per task, kept by the writer beside run_summary so that a new trial updates the
# distinct-task count with one key seek (ledger/summary_cache.py), where counting it meant a pass over the run's rows.
run_tasks = Table(
    "run_tasks",
    metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    Column("task_id", String(255), primary_key=True),
    Column("trials", Integer, nullable=False),  # current trials of the task (rows with 0 are deleted)
)

TRIAL_COLUMNS: tuple[str, ...] = tuple(c.name for c in trials.columns if c.name != "id")


def _create_v1(conn: Connection) -> None:
    metadata.create_all(conn, tables=[meta, runs, tasks, trials, artifacts, steps])


def _v2_identity(conn: Connection) -> None:
    """v2: the ledger's id (on every container it starts) and the run_locks table."""
    metadata.create_all(conn, tables=[run_locks])
    conn.execute(meta.insert().values(key="ledger_id", value=uuid.uuid4().hex))


def _v3_plans(conn: Connection) -> None:
    """v3: preregistered plans and the log of their checks."""
    metadata.create_all(conn, tables=[plans, plan_checks])


def _v4_summaries(conn: Connection) -> None:
    """v4: the index of SUMMARY_INDEXES (a fresh ledger got it from _create_v1)
    and run_summary/run_stats (Ledger fills them for the runs already there, in the same transaction)."""
    for index in SUMMARY_INDEXES:
        index.create(conn, checkfirst=True)
    metadata.create_all(conn, tables=[run_summary, run_stats])


def _v5_run_tasks(conn: Connection) -> None:
    """v5: run_tasks; every run's summary is dropped, so that Ledger recomputes it (run_tasks too) in the same
    transaction."""
    metadata.create_all(conn, tables=[run_tasks])
    conn.execute(run_stats.delete())


# v6: every verdict `compare` and `prereg check` printed, by family (a baseline content's, or one named
# with --family), so that each look spends its own share of the family's alpha (stats/looks.py). A row
# with candidate NULL (written by older versions' --reset-family) ends the looks before it.
looks = Table(
    "looks",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("family", String(255), nullable=False, index=True),
    Column("baseline", String(255), nullable=False),
    Column("candidate", String(255)),
    Column("tasks_sha", String(64)),  # compare: the comparison's key (stats/looks.py); prereg: the tasks' sha256
    Column("tasks", Integer),
    Column("source", String(16), nullable=False),  # compare | prereg
    Column("diff_pp", Float),
    Column("p_value", Float),
    Column("claim", Integer),  # the verdict as printed
    Column("at", String(40), nullable=False),
)


def _v6_looks(conn: Connection) -> None:
    """v6: the looks table (self-contained: creates only it)."""
    metadata.create_all(conn, tables=[looks])


MIGRATIONS: list[Callable[[Connection], None]] = [
    _create_v1, _v2_identity, _v3_plans, _v4_summaries, _v5_run_tasks, _v6_looks,
]  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)


VERSION_QUERY = select(meta.c.value).where(meta.c.key == "schema_version")


class DamagedLedger(TrialbookError):
    """The ledger's own records are gone (store.Ledger names the ledger): never re-initialised."""


def current_version(conn: Connection) -> int:
    """The ledger's schema version; 0 for an empty database. A ledger that lost its `meta` table, or the schema
    version or ledger id in it, is refused (DamagedLedger): migrating it would make them anew, a new ledger id
    among them, which would disown every container its runs started."""
    names = set(inspect(conn).get_table_names())
    if "meta" not in names:
        ours = sorted(names & set(metadata.tables))
        if ours:
            raise DamagedLedger(f"it has trialbook tables ({', '.join(ours)}) but no meta table")
        return 0
    rows: dict[str, str] = dict(conn.execute(select(meta.c.key, meta.c.value)).all())
    version = rows.get("schema_version")
    if version is None or not version.isdigit():
        raise DamagedLedger(f"its meta table has no schema version ({version!r})")
    if int(version) >= 2 and "ledger_id" not in rows:  # v2 added it (_v2_identity)
        raise DamagedLedger("its meta table has no ledger_id")
    return int(version)


def migrate(conn: Connection) -> int:
    """Bring the schema to SCHEMA_VERSION inside the caller's transaction; returns the old version."""
    old = current_version(conn)
    if old < SCHEMA_VERSION and conn.dialect.name == "sqlite":
        # Python's sqlite3 opens a transaction only before INSERT/UPDATE/DELETE: CREATE TABLE/INDEX
        # would each commit on their own. BEGIN IMMEDIATE makes the whole upgrade one transaction and
        # makes a second process opening the same old ledger wait for it (then re-read the version).
        dbapi = conn.connection.dbapi_connection
        if dbapi is not None and not dbapi.in_transaction:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
            old = current_version(conn)
    if old > SCHEMA_VERSION:
        raise TrialbookError(f"ledger schema v{old} is newer than this trialbook (v{SCHEMA_VERSION})")
    for step in MIGRATIONS[old:]:
        step(conn)
    if old != SCHEMA_VERSION:
        conn.execute(meta.delete().where(meta.c.key == "schema_version"))
        conn.execute(meta.insert().values(key="schema_version", value=str(SCHEMA_VERSION)))
    return old

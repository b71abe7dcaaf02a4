"""The ledger: one database (SQLite by default, PostgreSQL by URL) holding every run and trial.

Writes happen inside `Ledger.transaction()`; an exception anywhere inside rolls everything back,
so a failed import leaves the ledger exactly as it was.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, func, select, text
from sqlalchemy.exc import ArgumentError, DatabaseError, IntegrityError, OperationalError, SQLAlchemyError

from trialbook.errors import TrialbookError, UserError
from trialbook.extra_schema import read_extra, with_extra
from trialbook.ledger import locks, reads, schema, statements, summary_cache
from trialbook.ledger.reads import loads
from trialbook.ledger.rows import RunRow, TrialRow
from trialbook.ledger.schema import TRIAL_COLUMNS, artifacts, runs, steps, tasks, trials
from trialbook.ledger.url import connect_read_only, missing_ledger, read_only_reason, resolve_db, sqlite_file
from trialbook.names import check_run_name
from trialbook.redact import scrub, scrub_value

T = TypeVar("T")
# How long a PostgreSQL ledger that stopped answering (a restart) is waited for before the run stops, and how often
# it is tried meanwhile.
RECONNECT_WAIT_S = float(os.environ.get("TRIALBOOK_LEDGER_WAIT_S") or 120)
RECONNECT_POLL_S = 1.0

if TYPE_CHECKING:  # annotations only: `runs`/`show` must not import pydantic at start-up
    from trialbook.records import Run, Task, Trial


def masked(url: str, text: str | None = None) -> str:
    """`text` (default: `url`) with the URL's password shown as ***: what error messages print.
    Every piece of the password between `@`s goes too (a driver may echo a mis-split host)."""
    found = re.search(r"://[^/:@]*:([^/]*)@", url)
    out = re.sub(r"(://[^/:@]*:)[^/]*@", r"\1***@", url) if text is None else text
    for piece in found.group(1).split("@") if found else []:
        if piece:
            out = out.replace(piece, "***")
    return out


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _read_only_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA query_only=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.close()


def _cause(exc: BaseException) -> str:
    """The driver's first line, never the SQL and its parameters."""
    return (str(getattr(exc, "orig", None) or exc).splitlines() or [type(exc).__name__])[0]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _first(exc: BaseException | None) -> str:
    return (str(exc).splitlines() or ["?"])[0]


def dumps(value: Any) -> str | None:
    """A JSON column's text, with this process's secrets scrubbed (redact.py): nothing written holds a key."""
    return None if value is None else json.dumps(scrub_value(value), sort_keys=True, separators=(",", ":"))


def trial_row(run_id: int, t: Trial) -> tuple[Any, ...]:
    """A positional row in TRIAL_COLUMNS order."""
    return (
        run_id, t.task_id, t.attempt, t.repo, t.outcome.value, t.reward, t.step, t.wv, t.epoch,
        t.exception, t.exception_message and scrub(t.exception_message), t.duration_s, t.tokens, t.turns,
        dumps(t.tests), t.started_at, t.finished_at, dumps(t.extra), None,
    )  # fmt: skip


class Ledger:
    def __init__(self, db: str | None = None, create: bool = True, reads_only: bool = False) -> None:
        """Open (and migrate) the ledger; `create=False` (reading commands) refuses a SQLite file that
        does not exist instead of creating an empty one. A SQLite file this process cannot write is opened
        read-only for a command that only reads (`reads_only`) and refused for any other (before it writes)."""
        self.url = resolve_db(db)
        self.is_sqlite = self.url.startswith("sqlite")
        self.read_only: str | None = None  # why the ledger cannot be written (a SQLite file); None: it can
        if self.is_sqlite:
            path = sqlite_file(self.url)
            if not create and str(path) not in ("", ":memory:") and not path.is_file():
                raise missing_ledger(path)
            if not path.parent.is_dir():
                raise UserError(f"ledger directory does not exist: {path.parent}")
            self.read_only = read_only_reason(path) if "?" not in self.url and path.is_file() else None
            if self.read_only and not reads_only:
                raise UserError(f"ledger {path} is {self.read_only}: this command writes to it (reading ones can)")
        try:
            if self.read_only:
                # the pool hands a connection to any thread (SQLAlchemy sets that up for the files it opens itself)
                opener = lambda: connect_read_only(path, check_same_thread=False)  # noqa: E731
                self.engine: Engine = create_engine(self.url, creator=opener)
            else:  # PostgreSQL: a pooled connection the server dropped (a restart) is replaced at checkout
                self.engine = create_engine(self.url, **({} if self.is_sqlite else {"pool_pre_ping": True}))
        except (ArgumentError, ValueError, ImportError) as exc:
            raise UserError(masked(self.url, f"--db: invalid ledger URL {masked(self.url)}: {_first(exc)}")) from None
        if self.is_sqlite:
            event.listen(self.engine, "connect", _read_only_pragmas if self.read_only else _sqlite_pragmas)
        try:
            with self.engine.begin() as conn:
                if not self.is_sqlite:  # two first opens at once must not both create the tables
                    conn.execute(text("SELECT pg_advisory_xact_lock(7355608)"))
                if self.read_only and schema.current_version(conn) < schema.SCHEMA_VERSION:
                    raise UserError(
                        f"ledger {path} is {self.read_only} and at schema v{schema.current_version(conn)}: this"
                        f" trialbook reads v{schema.SCHEMA_VERSION} and upgrades a ledger only where it can write it"
                    )
                if schema.migrate(conn) < schema.SCHEMA_VERSION:
                    summary_cache.refresh(conn)  # an upgraded ledger's runs get their summaries in the same transaction
        except (OperationalError, DatabaseError) as exc:
            raise UserError(masked(self.url, f"cannot open ledger {masked(self.url)}: {_first(exc.orig)}")) from None
        except schema.DamagedLedger as exc:
            msg = f"ledger {masked(self.url)} is damaged: {exc}; refused, not re-initialised: restore it from a copy"
            raise TrialbookError(masked(self.url, msg)) from None
        except (ValueError, UnicodeError) as exc:  # e.g. a malformed host or port in the URL
            raise UserError(masked(self.url, f"--db: invalid ledger URL {masked(self.url)}: {_first(exc)}")) from None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        try:
            with self.engine.begin() as conn:
                yield conn
                summary_cache.refresh(conn)  # the runs this transaction changed get their summary numbers again
        # the driver's own errors too: bulk inserts run on the raw DBAPI cursor (insert_trials)
        except (SQLAlchemyError, self.engine.dialect.loaded_dbapi.Error) as exc:
            raise TrialbookError(f"ledger write failed, nothing was changed: {_cause(exc)}") from None

    def write(self, fn: Callable[[Connection], T], on_wait: Callable[[str], None] | None = None) -> T:
        """`fn(conn)` in one transaction, as `transaction`; on PostgreSQL a lost connection (the server restarted,
        the network dropped) is waited for, up to RECONNECT_WAIT_S, and `fn` run again in a new transaction, so
        `fn` must be safe to repeat (it may find its own rows of a commit whose answer was lost). `on_wait` gets one
        line when the wait starts (default: stderr)."""
        waited_since: float | None = None
        dbapi = self.engine.dialect.loaded_dbapi
        while True:
            try:
                with self.engine.begin() as conn:
                    out = fn(conn)
                    summary_cache.refresh(conn)
                    return out
            except (SQLAlchemyError, dbapi.Error) as exc:
                if self.is_sqlite or not isinstance(exc, OperationalError | dbapi.OperationalError):
                    raise TrialbookError(f"ledger write failed, nothing was changed: {_cause(exc)}") from None
                now = time.monotonic()
                if waited_since is None:
                    waited_since = now
                    line = (f"warning: ledger {masked(self.url)}: connection lost ({_cause(exc)}); waiting up to "
                            f"{RECONNECT_WAIT_S:g}s for the database to answer again")  # fmt: skip
                    (on_wait or _stderr)(line)
                elif now - waited_since > RECONNECT_WAIT_S:
                    raise TrialbookError(
                        f"ledger {masked(self.url)} did not answer again within {RECONNECT_WAIT_S:g}s: {_cause(exc)}"
                    ) from None
                time.sleep(RECONNECT_POLL_S)

    # ---- writes (inside a transaction) -------------------------------------------------
    def create_run(self, conn: Connection, run: Run, replace: bool = False) -> int:
        check_run_name(run.name)
        existing = conn.execute(select(runs.c.id).where(runs.c.name == run.name)).scalar()
        if existing is not None:
            if not replace:
                raise UserError(f"run '{run.name}' already exists (use --replace to overwrite it)")
            locks.refuse_if_live(conn, run.name)  # a run being executed is never replaced under its process
            self._delete_run(conn, existing)
        created = (run.created or datetime.now(UTC)).isoformat(timespec="seconds")
        values = {
            "name": run.name,
            "kind": run.kind,
            "created": created,
            "config": dumps(run.config),
            "stack": dumps(run.stack),
            "labels": dumps(run.labels),
            "source": run.source,
        }
        try:  # (the caller's transaction is abandoned on the error below)
            return int(conn.execute(runs.insert().values(**values).returning(runs.c.id)).scalar_one())
        except IntegrityError:  # another process created the same run between our check and insert
            raise UserError(f"run '{run.name}' was created by another process at the same time") from None

    @property
    def id(self) -> str:
        """This ledger's id (meta `ledger_id`): the `trialbook.ledger` label of every container it starts."""
        with self.engine.connect() as conn:
            return locks.ledger_id(conn)

    def _delete_run(self, conn: Connection, run_id: int) -> None:
        trial_ids = select(trials.c.id).where(trials.c.run_id == run_id)
        conn.execute(artifacts.delete().where(artifacts.c.trial_id.in_(trial_ids)))
        conn.execute(trials.delete().where(trials.c.run_id == run_id))
        conn.execute(steps.delete().where(steps.c.run_id == run_id))
        conn.execute(runs.delete().where(runs.c.id == run_id))

    def set_run_stack(self, conn: Connection, run_id: int, stack: dict[str, Any]) -> None:
        conn.execute(runs.update().where(runs.c.id == run_id).values(stack=dumps(stack)))

    def set_run_config(self, conn: Connection, run_id: int, config: dict[str, Any]) -> None:
        conn.execute(runs.update().where(runs.c.id == run_id).values(config=dumps(config)))

    def record_trial(self, conn: Connection, row: Sequence[Any], supersedes: int | None = None) -> int:
        """Insert one trial row (TRIAL_COLUMNS order) and return its id; mark `supersedes` replaced by it."""
        res = conn.execute(trials.insert().values(dict(zip(TRIAL_COLUMNS, row, strict=True))))
        # the driver's last row id (SQLite) or RETURNING (PostgreSQL): typed optional, never None for one row's INSERT
        new_id = int(res.inserted_primary_key[0])  # type: ignore[index]
        if supersedes is not None:  # marked once (ledger/summary_cache.catch_up counts on it)
            conn.execute(
                trials.update().where(trials.c.id == supersedes, trials.c.superseded_by.is_(None))
                .values(superseded_by=new_id)
            )  # fmt: skip
        return new_id

    def trial_names(self, conn: Connection, run_id: int, task_ids: set[str]) -> dict[str, int]:
        """The run's trials of `task_ids` by their trial name (extra.trial_name): what a repeated write finds."""
        q = select(trials.c.id, trials.c.extra).where(trials.c.run_id == run_id, trials.c.task_id.in_(task_ids))
        out = {}
        for tid, extra in conn.execute(q):
            name = read_extra(loads(extra)).trial_name
            if name:
                out[name] = int(tid)
        return out

    def add_trial_warning(self, conn: Connection, trial_id: int, warning: str) -> None:
        """Append `warning` to the trial's extra.warnings (e.g. its folder could not be written)."""
        extra = loads(conn.execute(select(trials.c.extra).where(trials.c.id == trial_id)).scalar())
        extra = with_extra(extra, warnings=[*read_extra(extra).warnings, scrub(warning)])
        conn.execute(trials.update().where(trials.c.id == trial_id).values(extra=dumps(extra)))

    def replace_steps(self, conn: Connection, run_id: int, rows: list[dict[str, Any]], replace: bool) -> None:
        """Store a run's optimizer steps (dicts of the `steps` columns); UserError if it has some and not `replace`."""
        have = conn.execute(select(func.count()).where(steps.c.run_id == run_id)).scalar_one()
        if have and not replace:
            name = conn.execute(select(runs.c.name).where(runs.c.id == run_id)).scalar_one()
            raise UserError(f"run '{name}' already has {have} steps (use --replace to overwrite them)")
        conn.execute(steps.delete().where(steps.c.run_id == run_id))
        conn.execute(steps.insert(), rows)

    def insert_trials(
        self, conn: Connection, rows: Iterable[Sequence[Any]], columns: Sequence[str] = TRIAL_COLUMNS
    ) -> None:
        """Bulk insert positional rows (in `columns` order, run_id first) with the driver's executemany.

        `rows` may be an iterator: the driver's cursor consumes it row by row, inside `conn`'s transaction.
        """
        mark = "?" if self.is_sqlite else "%s"
        sql = f"INSERT INTO trials ({', '.join(columns)}) VALUES ({', '.join([mark] * len(columns))})"
        cursor = conn.connection.cursor()
        try:
            # typed as taking a Sequence; sqlite3 and psycopg take any iterable (a driver error: transaction() says it)
            cursor.executemany(sql, rows)  # type: ignore[arg-type]
        finally:
            cursor.close()

    def insert_artifacts(self, conn: Connection, rows: Iterable[tuple[int, str, str]]) -> None:
        values = [{"trial_id": t, "name": n, "content": scrub(c)} for t, n, c in rows]
        if values:
            conn.execute(artifacts.insert(), values)

    def upsert_tasks(self, conn: Connection, items: Iterable[Task]) -> None:
        for task in items:
            values = task.model_dump()
            values["fail_to_pass"] = dumps(values["fail_to_pass"])
            values["pass_to_pass"] = dumps(values["pass_to_pass"])
            conn.execute(tasks.delete().where(tasks.c.task_id == task.task_id))
            conn.execute(tasks.insert().values(**values))

    def trial_ids(self, conn: Connection, run_id: int) -> dict[tuple[str, int], int]:
        q = select(trials.c.task_id, trials.c.attempt, trials.c.id).where(
            trials.c.run_id == run_id, trials.c.superseded_by.is_(None)
        )
        return {(t, a): i for t, a, i in conn.execute(q)}

    # ---- reads --------------------------------------------------------------------------
    def rows(self, statement: str, /, **params: Any) -> list[Any]:
        """The rows of the named read statement (ledger/statements.py) with its runtime `params`."""
        with self.engine.connect() as conn:
            return list(conn.execute(statements.STATEMENTS[statement], params))

    def get_run(self, name: str) -> RunRow:
        return reads.get_run(self, name)

    def run_names(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(conn.execute(select(runs.c.name).order_by(runs.c.id)).scalars())

    def trial_rows(self, run_id: int, current_only: bool = True, where: Any = None) -> Iterator[TrialRow]:
        """Trials of a run (JSON columns decoded), in insertion order; `where`: a further SQL condition."""
        q = select(trials).where(trials.c.run_id == run_id)
        if current_only:
            q = q.where(trials.c.superseded_by.is_(None))
        if where is not None:
            q = q.where(where)
        q = q.order_by(trials.c.id)
        with self.engine.connect() as conn:
            for row in conn.execute(q).mappings():
                out = dict(row)
                out["tests"] = loads(out["tests"])
                out["extra"] = loads(out["extra"])
                yield TrialRow(**out)

    def artifact(self, trial_id: int, name: str) -> str | None:
        q = select(artifacts.c.content).where(artifacts.c.trial_id == trial_id, artifacts.c.name == name)
        with self.engine.connect() as conn:
            return conn.execute(q).scalar()

    def artifacts_of(self, trial_id: int) -> dict[str, str]:
        """Every artifact of a trial, by name."""
        with self.engine.connect() as conn:
            q = select(artifacts.c.name, artifacts.c.content).where(artifacts.c.trial_id == trial_id)
            return {name: content for name, content in conn.execute(q)}

    def count_trials(self, run_id: int) -> int:
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).where(trials.c.run_id == run_id)).scalar_one())

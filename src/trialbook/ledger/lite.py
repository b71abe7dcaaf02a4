"""A SQLAlchemy-free reader of a SQLite ledger for `runs` and `show`.

Importing SQLAlchemy and its dialects is most of what `runs`/`show` would cost at start-up (issue 18).
`open_reads` gives these commands a `LiteLedger` (stdlib sqlite3, the statements' SQLite text from
sqlite_reads.py) when `--db` is a SQLite file at this trialbook's schema version; anything else (a
PostgreSQL URL, a missing file, an older or newer schema, a file SQLite cannot read) goes to
`store.Ledger`, which migrates the ledger or reports the one-line error, as for every command.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from trialbook.errors import TrialbookError
from trialbook.ledger.url import resolve_db, sqlite_file


def read_only_reason(path: Path) -> str | None:
    """Why this process cannot write the SQLite ledger at `path` (the file, or its folder where SQLite keeps the
    -wal and -shm files), or None when it can."""
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK | os.X_OK):
        return None
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        return "on a read-only file system"
    return "read-only (its file is not writable)" if not os.access(path, os.W_OK) else "in a read-only folder"


def connect_read_only(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """A connection to a ledger this process cannot write (`read_only_reason`) that never writes: `mode=ro`,
    which reads a WAL ledger's -wal through its -shm; where SQLite can neither open nor make a -shm (a read-only
    folder), `immutable=1`, exact only while no -wal file holds transactions not yet in the ledger's file."""
    uri = path.absolute().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, **kwargs)
        conn.execute("SELECT count(*) FROM sqlite_master")  # SQLite opens the file on the first statement
        return conn
    except sqlite3.OperationalError:
        wal = Path(f"{path}-wal")
        if wal.is_file() and wal.stat().st_size:
            raise TrialbookError(
                f"cannot read ledger {path}: it is {read_only_reason(path)} and its -wal file holds transactions"
                " SQLite can read only where it can write beside it: copy the ledger and its -wal somewhere writable"
            ) from None
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, **kwargs)


class LiteLedger:
    """A current-schema SQLite ledger read through sqlite3 (a reads.RowSource); never writes."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @classmethod
    def open(cls, path: Path) -> LiteLedger | None:
        """The reader, or None when `store.Ledger` must open this file (see the module's docstring)."""
        from trialbook.ledger.sqlite_reads import SCHEMA_VERSION

        if not path.is_file():
            return None
        try:
            if read_only_reason(path):
                conn = connect_read_only(path, isolation_level=None)
            else:
                conn = sqlite3.connect(path, isolation_level=None)
        except (sqlite3.Error, TrialbookError):  # store.Ledger reports it
            return None
        try:
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA busy_timeout=30000")  # as store.Ledger's connections: wait for a writer
            version = cls(conn).rows("schema_version")
            has_id = conn.execute("SELECT 1 FROM meta WHERE key = 'ledger_id'").fetchone()  # else: damaged
            if version and int(version[0][0]) == SCHEMA_VERSION and has_id:
                return cls(conn)
        except (sqlite3.Error, TrialbookError, ValueError):
            pass
        conn.close()
        return None

    def rows(self, statement: str, /, **params: Any) -> list[Any]:
        from trialbook.ledger.sqlite_reads import SQL

        sql, consts = SQL[statement]
        try:
            return self.conn.execute(sql, {**consts, **params}).fetchall()
        except sqlite3.Error as exc:  # as cli.main reports a failed read through SQLAlchemy: one line, no SQL
            raise TrialbookError(f"ledger read failed: {(str(exc).splitlines() or ['?'])[0]}") from None


def open_reads(db: str | None) -> Any:
    """A reads.RowSource for a command that only reads: a LiteLedger when it can, else `store.Ledger`."""
    url = resolve_db(db)
    if url.startswith("sqlite:///") and "?" not in url:
        lite = LiteLedger.open(sqlite_file(url))
        if lite is not None:
            return lite
    from trialbook.ledger.store import Ledger

    return Ledger(db, create=False, reads_only=True)

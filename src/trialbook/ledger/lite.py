"""A SQLAlchemy-free reader of a SQLite ledger for `runs` and `show`.

Importing SQLAlchemy and its dialects is most of what `runs`/`show` would cost at start-up
(tests/ledger/test_sqlite_reads.py::test_runs_and_show_import_neither_sqlalchemy_nor_numpy).
`open_reads` gives these commands a `LiteLedger` (stdlib sqlite3, the statements' SQLite text from
sqlite_reads.py) when `--db` is a SQLite file at this trialbook's schema version; anything else (a
PostgreSQL URL, a missing file, an older or newer schema, a file SQLite cannot read) goes to
`store.Ledger`, which migrates the ledger or reports the one-line error, as for every command.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from trialbook.errors import TrialbookError
from trialbook.ledger.url import connect_read_only, read_only_reason, resolve_db, sqlite_file


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

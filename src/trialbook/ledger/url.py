"""Which ledger `--db` names, and how a SQLite ledger this process cannot write is opened (no SQLAlchemy import:
`runs`/`show` resolve it before choosing a reader)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from trialbook.errors import TrialbookError, UserError
from trialbook.extras import require

DEFAULT_DB = "trialbook.db"


def missing_ledger(path: Path) -> UserError:
    """The one line for a reading command (or `serve`) given a SQLite ledger that does not exist."""
    return UserError(f"no ledger at {path} (check --db / $TRIALBOOK_DB; `import` or `run` create one)")


def resolve_db(db: str | None) -> str:
    """`--db`, else $TRIALBOOK_DB, else ./trialbook.db; returns an SQLAlchemy URL."""
    target = db or os.environ.get("TRIALBOOK_DB") or DEFAULT_DB
    if "://" in target:
        scheme = target.split("://", 1)[0]
        if scheme == "postgresql":
            require("postgres", "a postgresql:// ledger")
            return "postgresql+psycopg://" + target[len("postgresql://") :]
        if scheme in ("postgresql+psycopg", "sqlite"):
            return target
        raise UserError(f"--db: unsupported database '{scheme}://' (use a SQLite file path or a postgresql:// URL)")
    return f"sqlite:///{Path(target).expanduser()}"


def sqlite_file(url: str) -> Path:
    """The file a `sqlite:///PATH` URL (as resolve_db returns) names."""
    return Path(url.removeprefix("sqlite:///"))


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
        conn: sqlite3.Connection = sqlite3.connect(f"{uri}?mode=ro", uri=True, **kwargs)
        conn.execute("SELECT count(*) FROM sqlite_master")  # SQLite opens the file on the first statement
        return conn
    except sqlite3.OperationalError:
        wal = Path(f"{path}-wal")
        if wal.is_file() and wal.stat().st_size:
            raise TrialbookError(
                f"cannot read ledger {path}: it is {read_only_reason(path)} and its -wal file holds transactions"
                " SQLite can read only where it can write beside it: copy the ledger and its -wal somewhere writable"
            ) from None
        immutable: sqlite3.Connection = sqlite3.connect(f"{uri}?immutable=1", uri=True, **kwargs)
        return immutable

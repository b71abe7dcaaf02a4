"""Which ledger `--db` names (no SQLAlchemy import: `runs`/`show` resolve it before choosing a reader)."""

from __future__ import annotations

import os
from pathlib import Path

from trialbook.errors import UserError
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

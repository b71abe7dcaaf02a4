"""Which process is executing a run, held in the ledger itself (table `run_locks`), so that every
command writing to the ledger sees it: `--replace` of a live run is refused by `run`, `validate`
and every importer alike. The owner is host + pid + the process's start time; a row whose owner
is gone (kill -9) on this host is stale and taken over. The ledger's own id (meta `ledger_id`)
goes on every container, so two ledgers using the same run name never touch each other's.
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from trialbook.errors import UserError
from trialbook.ledger.schema import meta, run_locks


def ledger_id(conn: Connection) -> str:
    return str(conn.execute(select(meta.c.value).where(meta.c.key == "ledger_id")).scalar_one())


def _start_time(pid: int) -> str | None:
    try:  # field 22 of /proc/<pid>/stat, after the parenthesised command name
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def me() -> str:
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_time(pid) or '?'}"


def _alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname():
        return True  # another machine's process: assume it is running
    return pid.isdigit() and _start_time(int(pid)) == start


def holder(conn: Connection, run: str) -> str | None:
    """The live process executing `run` (host:pid:start), or None."""
    owner = conn.execute(select(run_locks.c.owner).where(run_locks.c.run == run)).scalar()
    return owner if owner is not None and _alive(owner) else None


def refuse_if_live(conn: Connection, run: str) -> None:
    owner = holder(conn, run)
    if owner is not None and owner != me():
        raise UserError(_busy(run, owner))


def _busy(run: str, owner: str) -> str:
    host, _, rest = owner.partition(":")
    return f"run '{run}' is being executed by another process (pid {rest.split(':')[0]} on {host}); stop it first"


def acquire(conn: Connection, run: str) -> None:
    """Take `run` for this process (in the caller's transaction); UserError when a live process has it."""
    owner = conn.execute(select(run_locks.c.owner).where(run_locks.c.run == run)).scalar()
    if owner == me():
        return
    if owner is not None:
        if _alive(owner):
            raise UserError(_busy(run, owner))
        conn.execute(run_locks.delete().where(run_locks.c.run == run, run_locks.c.owner == owner))
    try:  # (the caller's transaction is abandoned on the error below)
        conn.execute(run_locks.insert().values(run=run, owner=me(), since=datetime.now(UTC).isoformat()))
    except IntegrityError:
        raise UserError(f"run '{run}' was just taken by another process; stop it first") from None


def release(conn: Connection, run: str) -> None:
    conn.execute(run_locks.delete().where(run_locks.c.run == run, run_locks.c.owner == me()))

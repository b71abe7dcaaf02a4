"""One process at a time per run: an advisory flock on `runs/<run>/.lock` (kill -9 releases it)."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trialbook.errors import TrialbookError, UserError
from trialbook.harness.run.config import RunConfig
from trialbook.ledger import locks
from trialbook.ledger.store import Ledger

_held: set[Path] = set()  # locks this process holds (re-entered by execute() inside resume/rerun)


@contextmanager
def run_lock(config: RunConfig, run_name: str, ledger: Ledger | None = None) -> Iterator[None]:
    """Hold the run's lock: a resume must not race a live run. With `ledger`, the run is also
    marked as executing in the ledger (ledger/locks.py), where every importer's --replace sees it."""
    paths = config.paths(run_name)
    try:  # a runs folder made read-only (or a file) since the run started: one line, the ledger untouched
        paths.folder.mkdir(parents=True, exist_ok=True)
        path = paths.lock.resolve()
        fh = path.open("a+") if path not in _held else None
    except OSError as exc:
        raise TrialbookError(f"cannot write the run's folder {paths.folder}: {exc.strerror}") from None
    if fh is None:
        yield
        return
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "?"
            msg = f"run '{run_name}' is being executed by another process (pid {owner}); stop it first"
            raise UserError(msg) from None
        with contextlib.suppress(OSError):  # the pid is only for the message; a full disk must not stop the run
            os.ftruncate(fh.fileno(), 0)  # unbuffered: nothing left to fail again when the file closes
            os.pwrite(fh.fileno(), str(os.getpid()).encode(), 0)
        _held.add(path)
        try:
            if ledger is None:
                yield
                return
            with ledger.transaction() as conn:
                locks.acquire(conn, run_name)
            try:
                yield
            finally:
                with ledger.transaction() as conn:
                    locks.release(conn, run_name)
        finally:
            _held.discard(path)

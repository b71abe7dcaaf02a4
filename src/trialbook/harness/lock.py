"""One process at a time per run: an advisory flock on `runs/<run>/.lock` (kill -9 releases it)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trialbook.errors import UserError
from trialbook.harness.config import RunConfig

_held: set[Path] = set()  # locks this process holds (re-entered by execute() inside resume/rerun)


@contextmanager
def run_lock(config: RunConfig, run_name: str) -> Iterator[None]:
    """Hold the run's lock: a resume must not race a live run."""
    paths = config.paths(run_name)
    paths.folder.mkdir(parents=True, exist_ok=True)
    path = paths.lock.resolve()
    if path in _held:
        yield
        return
    with path.open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            owner = fh.read().strip() or "?"
            msg = f"run '{run_name}' is being executed by another process (pid {owner}); stop it first"
            raise UserError(msg) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        _held.add(path)
        try:
            yield
        finally:
            _held.discard(path)

"""A trial cut by its container engine (a daemon that restarted, went away, or whose API failed) is retried only once
the engine answers again: each retry waits for it (a ping a second) up to DAEMON_WAIT_S, and the first wait for an
engine says so in one line. An engine that stays away past the wait costs the trial (infra_error, retried by
`trialbook rerun --where infra_error`), and the run's breaker (--stop-after-errors) stops the run with one line."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from trialbook.outcomes import ErrorKind

DAEMON_WAIT_S = float(os.environ.get("TRIALBOOK_DAEMON_WAIT_S") or 120)
ENGINE_ERRORS = (ErrorKind.DAEMON, ErrorKind.CONTAINER_START)  # what a daemon that went away raises
_said: set[str] = set()
_lock = threading.Lock()


def engine_name(engine: Any) -> str:
    """The engine's address as the user gave it (--engine URL, DOCKER_HOST, else the local socket)."""
    url = getattr(engine, "url", None) or os.environ.get("DOCKER_HOST")
    return str(url or f"{getattr(engine, 'name', 'the container engine')} (local socket)")


def _answers(engine: Any) -> bool:
    try:
        engine.version()
        return True
    except Exception:  # noqa: BLE001 - any failure to answer is "not yet"
        return False


def await_engine(engine: Any, error: str | None, stop: threading.Event, wait_s: float | None = None) -> bool:
    """After a trial's `error`: wait (until `stop` is set) for `engine` to answer if it is an engine error and the
    engine does not answer now. True where the engine answers (or was never in question)."""
    if error not in ENGINE_ERRORS or _answers(engine):
        return True
    limit = DAEMON_WAIT_S if wait_s is None else wait_s
    name = engine_name(engine)
    with _lock:
        first = name not in _said
        _said.add(name)
    if first:
        print(f"warning: container engine {name} does not answer; trials it cut are retried once it does "
              f"(waiting up to {limit:g}s)", file=sys.stderr, flush=True)  # fmt: skip
    end = time.monotonic() + limit
    while time.monotonic() < end and not stop.is_set():
        if _answers(engine):
            flush = getattr(engine, "flush_pool", None)
            if callable(flush):  # its warm containers died with it
                flush()
            return True
        stop.wait(1.0)
    return False

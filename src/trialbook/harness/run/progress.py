"""A run's progress as people read it: a bar with labelled elapsed and remaining columns in a terminal, plain lines in
a log (nohup, Slurm, a CI job), the circuit breaker that stops a run whose trials all fail the same way, and the line
a stopped run leaves (how many trials are recorded, and the command that runs the rest)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from trialbook.errors import TrialbookError
from trialbook.harness.run.config import Tally
from trialbook.outcomes import ErrorKind, Outcome
from trialbook.records import Trial
from trialbook.redact import scrub

NOT_A_STREAK = {ErrorKind.INVALID_TASK.value}  # one broken task folder says nothing about the next task


def clock(seconds: float) -> str:
    s = int(max(seconds, 0))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def bar(console: Console) -> Progress:
    """The terminal's bar: trials done/total, resolved and errors, then labelled elapsed and remaining time."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("resolved {task.fields[resolved]} · errors {task.fields[errors]} · elapsed"),
        TimeElapsedColumn(),
        TextColumn("· remaining"),
        TimeRemainingColumn(),
        console=console,
        transient=False,
    )


class LogProgress:
    """Plain progress lines on stderr for a log: one every `every_s` seconds and one at every 5% of the trials, the
    first once the run has gone `every_s` (a run shorter than that has its summary only)."""

    def __init__(self, name: str, total: int, every_s: float, out: Any = None) -> None:
        self.name, self.total, self.every_s = name, total, every_s
        self.out = out or sys.stderr
        self.t0 = self.last = time.monotonic()
        self.done = self.resolved = self.errors = 0
        self.step = max(total // 20, 1)  # 5%
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._ticker = threading.Thread(target=self._tick, name="trialbook-progress", daemon=True)

    def __enter__(self) -> LogProgress:
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()

    def _tick(self) -> None:
        while not self._stop.wait(min(self.every_s, 1.0)):
            if time.monotonic() - self.last >= self.every_s and self.done < self.total:
                self.line()

    def update(self, done: int, resolved: int, errors: int) -> None:
        with self._lock:
            # (none when all are done: the run's summary follows at once)
            milestone = done // self.step > self.done // self.step and done < self.total
            self.done, self.resolved, self.errors = done, resolved, errors
        if milestone and time.monotonic() - self.t0 >= self.every_s:
            self.line()

    def line(self) -> None:
        with self._lock:
            elapsed = time.monotonic() - self.t0
            rate = self.done / elapsed if elapsed > 0 else 0.0
            left = self.total - self.done
            eta = clock(left / rate) if rate > 0 else "unknown"
            text = (
                f"progress {self.name}: {self.done}/{self.total} trials, resolved {self.resolved}, errors {self.errors}"
                f", elapsed {clock(elapsed)}, {rate * 60:.1f} trials/min, remaining ~{eta}"
            )
            self.last = time.monotonic()
        print(text, file=self.out, flush=True)


class TtyProgress:
    """The rich bar, behind the same two calls as LogProgress."""

    def __init__(self, name: str, total: int, console: Console) -> None:
        self.progress = bar(console)
        self.task = self.progress.add_task(name, total=total, resolved=0, errors=0)

    def __enter__(self) -> TtyProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def update(self, done: int, resolved: int, errors: int) -> None:
        self.progress.update(self.task, completed=done, resolved=resolved, errors=errors)

    def print(self, text: str) -> None:
        self.progress.console.print(text, markup=False, highlight=False)


def progress(name: str, total: int, every_s: float) -> TtyProgress | LogProgress:
    console = Console(stderr=True)
    return TtyProgress(name, total, console) if console.is_terminal else LogProgress(name, total, every_s)


def warn(shown: TtyProgress | LogProgress, text: str) -> None:
    text = scrub(text)
    if isinstance(shown, TtyProgress):
        shown.print(text)
    else:
        print(text, file=sys.stderr, flush=True)


class CircuitOpen(TrialbookError):
    """The same infrastructure error ended N trials in a row: the run stops (exit 1); `resume` runs the rest."""

    exit_code = 1


class Breaker:
    """Counts the trials in a row (in the order they end) that ended infra_error with one exception type."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kind: str | None = None
        self.streak = 0

    def record(self, trial: Trial) -> bool:
        """True when this trial makes `limit` in a row."""
        kind = trial.exception if trial.outcome == Outcome.INFRA_ERROR else None
        if kind is None or kind in NOT_A_STREAK:
            self.kind, self.streak = None, 0
            return False
        self.streak = self.streak + 1 if kind == self.kind else 1
        self.kind = kind
        return bool(self.limit) and self.streak >= self.limit

    def message(self, run: str, tally: Tally, trial: Trial) -> str:
        cause = ((trial.exception_message or "").strip().splitlines() or [""])[0][:200]
        why = f"stopped: {self.streak} trials in a row ended {trial.exception} ({cause})"
        return f"{stopped_line(run, tally, why)} once the cause is fixed (--stop-after-errors N; 0: never stop)"


def stopped_line(run: str, tally: Tally, why: str) -> str:
    left = tally.total - tally.done
    return (f"{why}: {tally.done} of {tally.total} trials recorded; `trialbook resume {run}` runs the other {left}"
            if left else f"{why}: all {tally.total} trials recorded")  # fmt: skip


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (Slurm's scancel, a CI job's timeout, `kill`) stops the run as Ctrl-C does: the trials in flight are
    stopped and not recorded, and the stop line says what `resume` will run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum: int, _frame: Any) -> None:
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)

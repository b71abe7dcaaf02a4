"""The witness run of a task graded by its reward file, side by side with the graded run (docs/threat-model.md).

The graded run of such a task holds no canary (one would fail an honest run), so a resolving grade is witnessed by a
second run with canaries (verify/blame.unwitnessed_reward). That run had come after the graded one, some seconds
later: a change active only in the first seconds after the agent ended (its own timestamp read at import) resolved in
the graded run and failed honestly in the witness (tests/verify/test_witness_alongside.py). Here the witness starts
with the graded run: two fresh containers of the task's image and limits, the change carried into each the same way
(the witness's carry keeps nothing in the trial's Change), and each box's tests start only once both are carried
(a barrier; a box that could not be opened breaks it, and the other goes on alone). The graded run's first try
only: a retry runs alone.

Its result is used as before, and only when the graded run resolved by its reward file; otherwise it is cut short
(`cancel`: its box's running command killed) and discarded. Whatever it raises (an infra error, a deadline) is kept as
its record's `raised`, never the trial's: like a witness that did not finish, the grade stands. Every path joins its
thread, so its container is removed (by `close_box`, as every verifier box is) before the trial is recorded; the run's
deadline or interrupt stops its commands as they stop the graded run's.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from trialbook.sandbox import Sandbox
from trialbook.tasks import TaskSpec
from trialbook.verify.isolation import Grading, grade
from trialbook.verify.runner import witnessable

POLL_S = 0.2  # how often a join looks at the run's stop event
START_S = 120.0  # past the carry's own budget (2 x the verifier's timeout), what a box may take to start


def alongside(task: TaskSpec) -> bool:
    """Whether a trial of `task` graded in fresh containers runs its witness beside the graded run."""
    return task.isolation == "diff" and not task.lists_tests and witnessable(task)


def needed(grading: Grading) -> bool:
    """Whether the graded run's grading can be one the witness decides on (blame.unwitnessed_reward)."""
    v = grading.verdict
    return v is not None and v.graded_by == "reward_file" and v.reward >= 1.0


class _Either:
    """A box's stop event (Sandbox.stop): set when the run's is (deadline, interrupt) or the witness is cut."""

    def __init__(self, *events: Any) -> None:
        self.events = events

    def is_set(self) -> bool:
        return any(e.is_set() for e in self.events)

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            self.events[-1].wait(POLL_S if left is None else min(POLL_S, left))
        return True


class SideBySide:
    """One trial's witness run, in a thread of its own from `start` until `result` or `cancel` joins it."""

    def __init__(self, task: TaskSpec, stop: threading.Event, name: str = "") -> None:
        self.task, self.stop = task, stop
        self.cut = threading.Event()
        self._barrier = threading.Barrier(2)
        self._wait_s = 2 * task.verifier_timeout + START_S
        self._thread: threading.Thread | None = None
        self._grading: Grading | None = None
        self.name = name

    def begin(self, start: Callable[..., Sandbox]) -> Callable[..., Sandbox]:
        """`start` for the witness's boxes: each also stops when the witness is cut."""

        def started(*args: Any, **kwargs: Any) -> Sandbox:
            box = start(*args, **kwargs)
            box.stop = _Either(box.stop, self.cut)  # type: ignore[assignment]
            return box

        return started

    def graded(self, open_box: Callable[[int], Sandbox]) -> Callable[[int], Sandbox]:
        """`open_box` for the graded run: its first box's tests wait for the witness's box."""

        def open_first(k: int) -> Sandbox:
            return self._met(open_box, k) if k == 0 else open_box(k)

        return open_first

    def start(self, open_box: Callable[[int], Sandbox], close_box: Callable[[Sandbox], None]) -> None:
        """The witness run (isolation.grade, one try, canaries planted) in `open_box(0)` boxes, starting now."""

        def run() -> None:
            try:
                self._grading = grade(self.task, lambda k: self._met(open_box, k), close_box, tries=1, witness=True)
            except BaseException as exc:  # noqa: BLE001 - the witness's failure is never the trial's
                self._grading = Grading(extra={"raised": f"{type(exc).__name__}: {exc}"[:500]})
            finally:
                self._barrier.abort()  # the graded run never waits for a witness that ended

        self._thread = threading.Thread(target=run, name=f"witness-{self.name}", daemon=True)
        self._thread.start()

    def _met(self, open_box: Callable[[int], Sandbox], k: int) -> Sandbox:
        try:
            box = open_box(k)
        except BaseException:
            self._barrier.abort()
            raise
        with contextlib.suppress(threading.BrokenBarrierError):
            self._barrier.wait(self._wait_s)
        return box

    def result(self) -> Grading:
        """The witness's grading once it ended (`raised` in its extra when it raised, no verdict when it was cut)."""
        self._join()
        return self._grading or Grading(extra={"raised": "not started"})

    def cancel(self) -> None:
        """Cut the witness short (not needed, or the trial ends otherwise) and wait for its box to be removed."""
        self.cut.set()
        self._barrier.abort()
        self._join()

    def _join(self) -> None:
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(POLL_S)
            if self.stop.is_set():
                self.cut.set()

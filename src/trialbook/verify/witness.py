"""The witness runs of a task graded by its reward file, each side by side with a graded try (docs/threat-model.md).

The graded run of such a task holds no canary (one would fail an honest run), so a resolving grade is witnessed by a
second run with canaries (verify/blame.unwitnessed_reward). That run had come after the graded one, some seconds
later: a change active only in the first seconds after the agent ended (its own timestamp read at import) resolved in
the graded run and failed honestly in the witness (tests/verify/test_witness_alongside.py). Here every graded try,
a retry included, gets a witness of its own that starts with it (`Witnessed`): two fresh containers of the task's
image and limits, neither touched by any other run, the change carried into each the same way (the witness's carry
keeps nothing in the trial's Change), and each box's tests start only once both are carried (a barrier; a box that
could not be opened breaks it, and the other goes on alone). A retry had run alone, unwitnessed, and a change that
forced it (a reward path made a folder: now graded 0 itself, verify/runner.NOT_A_FILE) cheated only there.

The witness of the try whose grade stands is used only when that try resolved by its reward file; otherwise it is cut
short (`cancel`: its box's running command killed) and discarded, as is the witness of a try that is retried.
Whatever it raises (an infra error, a deadline) is kept as its record's `raised` and its error: a resolving grade
without a witness's verdict is no grade (blame.unwitnessed_reward). Every path joins its thread, so its container is
removed (by `close_box`, as every verifier box is) before the trial is recorded; the run's deadline or interrupt
stops its commands as they stop the graded run's.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from trialbook.outcomes import ErrorKind, error_kind
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec
from trialbook.verify.isolation import Grading, grade
from trialbook.verify.notes import ErrorNote, GradingNotes
from trialbook.verify.runner import one_run, witnessable

POLL_S = 0.2  # how often a join looks at the run's stop event
START_S = 120.0  # past the carry's own budget (2 x the verifier's timeout), what a box may take to start


def _not_started() -> Grading:
    return Grading(error=ErrorNote(ErrorKind.ISOLATION, "not started"), notes=GradingNotes(raised="not started"))


def alongside(task: TaskSpec) -> bool:
    """Whether a trial of `task` runs a witness beside each graded try: graded by its reward file, witnessable, and not
    graded in one run that is its own witness (runner.one_run, verify/onerun.py). In
    either isolation the witness's container is a fresh one (`isolation = "container"`: the agent's working tree
    carried into it, front._witness_change)."""
    return not task.lists_tests and witnessable(task) and not one_run(task)


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
    """One graded try's witness run, in a thread of its own from `start` until `result` or `cancel` joins it."""

    def __init__(self, task: TaskSpec, stop: threading.Event, name: str = "") -> None:
        self.task, self.stop = task, stop
        self.cut = threading.Event()
        self._barrier = threading.Barrier(2)
        self._wait_s = 2 * task.verifier_timeout + START_S
        self._thread: threading.Thread | None = None
        self._grading: Grading | None = None
        self.name = name

    def begin(self, start: Callable[..., Box]) -> Callable[..., Box]:
        """`start` for the witness's boxes: each also stops when the witness is cut."""

        def started(*args: Any, **kwargs: Any) -> Box:
            box = start(*args, **kwargs)
            box.stop = _Either(box.stop, self.cut)  # type: ignore[assignment]
            return box

        return started

    def start(self, open_box: Callable[[int], Box], close_box: Callable[[Box], None]) -> None:
        """The witness run (isolation.grade, one try, canaries planted) in `open_box(0)` boxes, starting now."""

        def run() -> None:
            try:
                self._grading = grade(self.task, lambda k: self.meet(open_box, k), close_box, tries=1, witness=True)
            except BaseException as exc:  # noqa: BLE001 - the witness's failure is never the graded run's
                message = f"{type(exc).__name__}: {exc}"[:500]
                kind = ErrorKind._value2member_map_.get(error_kind(exc), ErrorKind.ISOLATION)
                self._grading = Grading(error=ErrorNote(ErrorKind(kind), message), notes=GradingNotes(raised=message))
            finally:
                self._barrier.abort()  # the graded run never waits for a witness that ended

        self._thread = threading.Thread(target=run, name=f"witness-{self.name}", daemon=True)
        self._thread.start()

    def meet(self, open_box: Callable[[int], Box], k: int) -> Box:
        """`open_box(k)`, returned once the other run's box is open too (or could not be)."""
        try:
            box = open_box(k)
        except BaseException:
            self._barrier.abort()
            raise
        with contextlib.suppress(threading.BrokenBarrierError):
            self._barrier.wait(self._wait_s)
        return box

    def result(self) -> Grading:
        """The witness's grading once it ended (`raised` in its notes when it raised, no verdict when it was cut)."""
        self._join()
        return self._grading or _not_started()

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


class Witnessed:
    """Every graded try of one trial with a witness of its own beside it (SideBySide): `graded` wraps the graded run's
    `open_box`, so that try k's box is opened beside a fresh witness (`open_witness(side, k)`: the witness's own
    `open_box`, its boxes started through `side.begin`), the previous try's witness cut and discarded first."""

    def __init__(
        self,
        task: TaskSpec,
        stop: threading.Event,
        name: str,
        open_witness: Callable[[SideBySide, int], Callable[[int], Box]],
        close_box: Callable[[Box], None],
    ) -> None:
        self.task, self.stop, self.name = task, stop, name
        self.open_witness, self.close_box = open_witness, close_box
        self.side: SideBySide | None = None

    def graded(self, open_box: Callable[[int], Box]) -> Callable[[int], Box]:
        def open_try(k: int) -> Box:
            self.cancel()  # the witness of a try that is retried decides nothing
            side = self.side = SideBySide(self.task, self.stop, f"{self.name}-{k}")
            side.start(self.open_witness(side, k), self.close_box)
            return side.meet(open_box, k)

        return open_try

    def result(self) -> Grading:
        """The witness of the last graded try (its `raised` when there was none)."""
        if self.side is None:
            return _not_started()
        return self.side.result()

    def cancel(self) -> None:
        if self.side is not None:
            self.side.cancel()

"""The verifier's front door: a trial reaches verify/ through one `TrialVerifier` (at the end), whose `grade` grades
what the agent left against its task.

`grade_change(box, task, ...)` -> `Grading` (isolation.py: the verdict, or the error the policy table names, the log,
the tries, what each rule found). What it does, by the task's `[verifier] isolation`:
- `diff` (the default): the agent's change is captured from its container (isolation.capture), which is then removed;
  the change is graded in fresh containers of the image (isolation.grade), and the blame rules run on what that
  found (blame.py: a hang, a limit, a reward file, a missing canary, the test infrastructure's control);
- `container`: graded in the agent's own container, restored before each run; its reward file checked in a fresh
  one (blame.reward_file).
A task graded by its reward file has each graded try witnessed beside it in a container of its own (witness.py).
Every container it started is removed before it returns or raises; the trial (harness/trial/execution.py) keeps the
result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

from trialbook.extra_schema import Extra
from trialbook.outcomes import ErrorKind
from trialbook.sandbox import Backend, Box
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.tasks import TaskSpec
from trialbook.verify import blame, footprint, hacks, leak_moves, sources
from trialbook.verify import canary as canaries
from trialbook.verify import witness as witnesses
from trialbook.verify.isolation import (
    CarryOutgrown,
    CarryTimeout,
    Change,
    Grading,
    IsolationError,
    LimitHit,
    apply_change,
    base_preparer,
    capture,
    grade,
    in_place_patch,
    printable,
    restore_container,
    workdir_of,
)
from trialbook.verify.kept_patch import kept_patch, patch_record
from trialbook.verify.notes import ControlRun
from trialbook.verify.runner import Verdict
from trialbook.verify.verdict_record import trial_tags, verdict_keys


class Stops(Protocol):
    """The run's stop signal (harness/trial/execution.Stopper): `check` raises once a deadline or an interrupt fired."""

    event: threading.Event

    def check(self) -> None: ...


class Notes(blame.TrialNotes, Protocol):
    """What the verifier writes of a trial's state besides blame's: the agent's patch as it was graded."""

    patch: str  # "" when the agent changed nothing


def grade_change(
    box: Box,
    task: TaskSpec,
    engine: Backend,
    image: str,
    start: Callable[..., Box],
    name: str,
    stopper: Stops,
    state: Notes,
) -> Grading:
    """Grade what the agent left in `box` against `task` (the module's docstring). `start(box_name, prepare)` starts a
    container of `image` as the trial's own are started; verifier containers are named `name` + a suffix."""
    change: Change | None = None
    try:
        if task.isolation == "container":
            # the change's patch, read before the tests run in that container (signatures only: isolation.py)
            # no working tree known (no workdir, no WORKDIR): no patch to keep, the grade does not need one
            workdir = (task.workdir or engine.image_workdir(image) or "").rstrip("/")
            patch = in_place_patch(box, workdir, task.verifier_timeout) if workdir else None
            # a reward-file task's witnesses run in fresh containers, the agent's tree carried in (witness.py)
            change = _witness_change(box, workdir) if witnesses.alongside(task) else None
            witnessed = _witnessing(start, name, change, task, stopper, state) if change is not None else None
            grading = _grade_container(box, task, stopper, lambda _k: start(f"{name}-b"), state, witnessed)
            keep_patch(patch, grading, state)
        else:
            workdir = workdir_of(engine, task, image)
            try:
                change = capture(box, workdir)
            except TreeTooLargeError as exc:
                blame.remove_box(box, state)
                grading = blame.big_tree(exc, lambda: start(f"{name}-i"), workdir, state)
            else:
                blame.remove_box(box, state)
                grading = _grade_diff(start, name, change, task, stopper, state)
    finally:
        if change is not None:
            change.tree.close()
    if grading.notes.verifier_disk_hit:
        state.tags.append("disk_quota_in_tests")  # graded 0 (isolation.grade)
    return grading


def keep_patch(patch: str | None, grading: Grading, state: Notes) -> None:
    """The agent's patch kept whole with the trial (patch.py), and its reward-hacking signatures (hacks.py)."""
    state.patch = patch or ""
    if patch:
        grading.notes.patch = patch_record(patch)
        state.tags.extend(hacks.signatures(patch))


def _witness_change(box: Box, workdir: str) -> Change | None:
    """`isolation = "container"`, a task graded by its reward file: the agent's working tree, copied out before any
    run touches the container, for its witnesses' fresh containers; None when it cannot be (no working tree known,
    or past what a copy holds): then nothing witnesses it (tagged `unwitnessed`, blame.unwitnessed_reward)."""
    if not workdir:
        return None
    try:
        return capture(box, workdir)
    except (TreeTooLargeError, IsolationError):
        return None


def _grade_container(
    box: Box,
    task: TaskSpec,
    stopper: Stops,
    fresh: Callable[[int], Box],
    state: Notes,
    witnessed: witnesses.Witnessed | None = None,
) -> Grading:
    """`isolation = "container"`: graded in the agent's own container, restored before each run; what a reward file
    says is checked against the verifier in a `fresh` container from the image (without the agent's work), as a
    diff's grade is. A task graded by its reward file has each graded try `witnessed` beside it in a fresh container
    of its own, never in the one the graded run touched (state it left there told the witness apart)."""

    def reopen(_k: int) -> Box:
        stopper.check()
        restore_container(box, task)
        return box

    try:
        grading = grade(task, witnessed.graded(reopen) if witnessed else reopen, lambda _b: None)
        if witnessed is not None and not witnesses.needed(grading):
            witnessed.cancel()
        result = witnessed.result if witnessed is not None else None
        blame.reward_file(task, fresh, grading, state, witness=result)
    finally:
        if witnessed is not None:
            witnessed.cancel()
    return grading


def _witnessing(
    start: Callable[..., Box], name: str, change: Change, task: TaskSpec, stopper: Stops, state: Notes
) -> witnesses.Witnessed:
    """Witnesses for each graded try: fresh containers of the image, `change` carried in (not kept in it)."""
    return witnesses.Witnessed(
        task, stopper.event, name,
        lambda w, k: _opener(w.begin(start), f"{name}-w{k}-", change, task, stopper, state, Carry([], keep=False)),
        lambda b: blame.remove_box(b, state),
    )  # fmt: skip


def _grade_diff(
    start: Callable[..., Box], name: str, change: Change, task: TaskSpec, stopper: Stops, state: Notes
) -> Grading:
    """Grade the agent's diff in fresh containers; a test-infrastructure change is also graded without it. A task
    graded by its reward file has a witness run (blame.unwitnessed_reward) started beside each graded try,
    in a container of its own (witness.py): joined, its container removed, before this returns or raises."""

    def opener(
        suffix: str, exclude: list[str] | None, begin: Callable[..., Box] = start, keep: bool = True
    ) -> Callable[[int], Box]:
        return _opener(begin, f"{name}-{suffix}", change, task, stopper, state, Carry(exclude, keep), start)

    state.workdir = change.workdir  # the baseline's footprint is read outside it (footprint.py)
    close = lambda b: blame.remove_box(b, state)  # noqa: E731
    side = _witnessing(start, name, change, task, stopper, state) if witnesses.alongside(task) else None
    graded = side.graded(opener("v", [])) if side is not None else opener("v", [])
    try:
        grading = grade(task, graded, close, footprint=footprint.reader(task, change.workdir, resolving=True))
        if side is not None and not (change.files and witnesses.needed(grading)):
            side.cancel()  # nothing for it to decide: cut short, discarded
        return _after_grade(grading, opener, change, task, state, side.result if side is not None else None)
    finally:
        if side is not None:
            side.cancel()


def _after_grade(
    grading: Grading,
    opener: Callable[..., Callable[[int], Box]],
    change: Change,
    task: TaskSpec,
    state: Notes,
    witness: Callable[[], Grading] | None,
) -> Grading:
    """What follows the graded run of a diff: the blame rules (blame.py) and the test-infrastructure control."""
    keep_patch(change.patch, grading, state)
    if change.too_long:
        grading.notes.paths_too_long = change.too_long
    if grading.error is not None and grading.error.kind == ErrorKind.VERIFIER_TIMEOUT and change.files:
        blame.hang(task, opener("b", None), grading, state)
    if grading.error is not None and grading.notes.limits_hit_in_tests and change.files:
        blame.limits(task, opener("b", None), grading, state)
    if change.files:
        blame.reward_file(task, opener("b", None), grading, state, witness=witness)
    verdict = grading.verdict
    if verdict is not None and verdict.reward >= 1.0 and verdict.canary_seen in canaries.UNSEEN and change.files:
        blame.missing_canary(task, opener("b", None), grading, state)
    if not change.test_infra:
        return grading
    state.tags.append("test_infra_changed")
    grading.notes.test_infra_files = [printable(p) for p in change.test_infra]
    if grading.verdict is not None and grading.verdict.reward >= 1.0:
        control = grade(task, opener("c", change.test_infra), lambda b: blame.remove_box(b, state))
        reward = control.verdict.reward if control.verdict else None
        ran = grading.notes.control = ControlRun(reward=reward, error=control.error.kind if control.error else None)
        if reward is None or reward < 1.0:  # resolved only with the agent's own test infrastructure
            grading.verdict = grading.verdict.model_copy(update={"reward": reward or 0.0, "tests": None})
            ran["log_tail"] = control.log[-2000:]
    return grading


class Carry(NamedTuple):
    """What of the agent's change a verifier box gets: all of it but `exclude` (None: none, the image as built);
    `keep`: what the carry learns of the change kept in it (apply_change)."""

    exclude: list[str] | None
    keep: bool = True


def _opener(
    begin: Callable[..., Box],
    prefix: str,
    change: Change,
    task: TaskSpec,
    stopper: Stops,
    state: Notes,
    carry: Carry,
    start: Callable[..., Box] | None = None,
) -> Callable[[int], Box]:
    """Fresh verifier boxes (started by `begin`, named `prefix` + try, prepared as warm verifier boxes are) with the
    change carried in as `carry` says; `start`: how the image's own tree is measured when the carry outgrew its time
    (blame.slow_carry)."""
    image_id = state.image_id
    exclude, keep = carry
    prepare = ("verifier", base_preparer(change.workdir, task.verifier_timeout, image_id))  # as TrialVerifier.prepare

    def open_box(k: int) -> Box:
        stopper.check()
        vbox = begin(f"{prefix}{k}", prepare)
        try:
            sources.learn_image(vbox, task, change.workdir)  # before the change: what canaries copy
            if exclude is not None:
                apply_change(vbox, change, task, exclude, task.verifier_timeout, image_id, keep)
        except IsolationError as exc:
            hits, disk = vbox.limit_hits(), vbox.look_at_disk()
            blame.remove_box(vbox, state)
            if disk:  # the carried change filled the verifier's disk quota: the agent's doing
                raise CarryOutgrown(
                    f"the agent's change took {disk:,} bytes in the verifier, past disk_mb = {task.disk_mb}"
                ) from None
            if hits:  # the task's own limits stopped the harness's git: on the image's tree, not the agent's doing
                raise LimitHit(hits, exc.agent_side) from None
            if isinstance(exc, CarryTimeout) and exc.agent_side:
                measure = start or begin
                blame.slow_carry(exc, lambda: measure(f"{prefix}i", prepare), change.workdir, state)
            raise
        except BaseException:
            blame.remove_box(vbox, state)
            raise
        return vbox

    return open_box


class TrialVerifier:
    """The verifier as one trial sees it (harness/trial/execution.py): the trial's only door into verify/. Built once
    a trial, it warms the verifier's containers, grades the agent's change, removes the trial's containers, and says
    what the verdict and the agent's files add to the trial's record."""

    def __init__(self, engine: Backend, task: TaskSpec, stopper: Stops, state: Notes) -> None:
        self.engine, self.task, self.stopper, self.state = engine, task, stopper, state

    def prepare(self, image: str, image_id: str) -> tuple[str, Callable[[Box], Any]]:
        """What a warm verifier container computes while the agent works (the image's side of the agent's diff)."""
        workdir = workdir_of(self.engine, self.task, image)
        return "verifier", base_preparer(workdir, self.task.verifier_timeout, image_id)

    def grade(self, box: Box, image: str, start: Callable[..., Box], name: str) -> Grading:
        """Grade what the agent left in `box` (grade_change)."""
        return grade_change(box, self.task, self.engine, image, start, name, self.stopper, self.state)

    def release(self, box: Box) -> None:
        """Remove the agent's container; a failure is the trial's `cleanup_error`, never its result."""
        blame.remove_box(box, self.state)

    def tags(
        self, verdict: Verdict | None, resolved: bool, gathered: list[str], agent_files: dict[str, str]
    ) -> list[str]:
        """The trial's tags: the verdict's, the try's (`gathered`) and the leak moves its agent's files record."""
        moves = leak_moves.signatures(leak_moves.agent_commands(agent_files), self.task.repo) if agent_files else []
        return trial_tags(verdict, resolved, [*gathered, *moves])

    @staticmethod
    def record(verdict: Verdict) -> Extra:
        """What the verdict adds to the trial's `extra`."""
        return verdict_keys(verdict)

    @staticmethod
    def kept_files(patch: str) -> dict[str, str]:
        """The agent's patch as the trial folder and the ledger keep it (verify/kept_patch.py)."""
        return kept_patch(patch) if patch else {}

"""Whose doing a verifier's failure (or a suspicious success) is: the change's, or the task's and its sandbox's.

When a grade could be either (a hang, no reward file, the sandbox's limits hit, a reward file that test.sh may not have
been the last to write, a canary not reported), the verifier runs once on the task's image as built, without any
change (`baseline`: once per task and image), and the comparison decides: what only the change does is graded 0 (a
failure that would otherwise leave the trial ungraded, a free exit a policy could learn to reach for), what the image
does as well stands. The carry of a change that outgrew its time or size is weighed against the image's own tree the
same way (`slow_carry`, `big_tree`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from trialbook.outcomes import ErrorKind
from trialbook.sandbox import Box, SandboxError
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.tasks import TaskSpec
from trialbook.verify import canary as canaries
from trialbook.verify import footprint as footprints
from trialbook.verify.isolation import (
    CarryOutgrown,
    CarryTimeout,
    Grading,
    IsolationError,
    change_too_large,
    grade,
    image_tree_bytes,
    index_image_tree,
)
from trialbook.verify.notes import ErrorNote, GradingNotes, WithoutChange, WitnessRun
from trialbook.verify.runner import Verdict, failing_tests, passing_tests, per_test_lines, witnessable


class TrialNotes(Protocol):
    """What blame reads and writes of a trial's state (harness/trial/state.TrialState): the image's id and the working
    tree its baselines run on, the tags it adds, a container it could not remove."""

    tags: list[str]
    cleanup_error: str | None
    workdir: str | None

    @property
    def image_id(self) -> str: ...


def remove_box(box: Box, state: TrialNotes) -> None:
    """Remove a trial's container; a failure is the trial's `cleanup_error`, never its result."""
    try:
        box.remove()
    except SandboxError as exc:  # the trial's result stands; `clean` finds the leftover
        state.cleanup_error = str(exc)


CARRY_MARGIN = 10  # a carry that times out is the change's doing when the image's own tree takes <= 1/10 of its time
# Per process, keyed by (what, image id, working tree): the image's own tree measured once, in a fresh container, the
# first time a trial needs it: "index_s", seconds the harness's git takes to index it (None: not within a carry's
# time); "bytes", its size as an archive (None: past SNAPSHOT_LIMIT)
_IMAGE_TREE: dict[tuple[str, str, str], Any] = {}
_IMAGE_TREE_LOCK = threading.Lock()


def _image_tree(
    what: str, open_box: Callable[[], Box], workdir: str, state: TrialNotes, measure: Callable[[Box], Any]
) -> Any:
    key = (what, state.image_id, workdir)
    with _IMAGE_TREE_LOCK:
        if key not in _IMAGE_TREE:
            box = open_box()
            try:
                _IMAGE_TREE[key] = measure(box)
            finally:
                remove_box(box, state)
    return _IMAGE_TREE[key]


def big_tree(exc: TreeTooLargeError, open_box: Callable[[], Box], workdir: str, state: TrialNotes) -> Grading:
    """The agent's working tree ran past the limit of a copy (sandbox/box.SNAPSHOT_LIMIT) as an archive. With the
    image's own tree at most half of it, the agent's tree is what grew (a sparse file of a terabyte, no disk behind
    it: tests/harness/test_carry_timeout.py): graded 0 as ChangeTooLargeError, not an ungraded infra error;
    otherwise the image's own tree is too big to carry: IsolationError."""
    size = _image_tree("bytes", open_box, workdir, state, lambda box: image_tree_bytes(box, workdir))
    if size is not None and 2 * size <= exc.limit:
        message = f"{exc}; the image's own tree: {size:,} bytes"
        return change_too_large(Grading(notes=GradingNotes(image_tree_bytes=size)), message)
    own = "over it too" if size is None else f"{size:,} bytes, over half of it"
    raise IsolationError(f"{exc}; the image's own tree is {own}") from None


def slow_carry(exc: CarryTimeout, open_box: Callable[[], Box], workdir: str, state: TrialNotes) -> None:
    """Carrying the agent's change ran past its time once the image's side was done. When the harness indexes the
    image's own tree in a tenth of that time (or less), the agent's tree is what took it (300,000 files, say:
    tests/harness/test_carry_timeout.py): CarryOutgrown, graded 0 as ChangeTooLargeError, not an ungraded infra error
    a policy could learn to reach for; otherwise the IsolationError stands (the sandbox is too slow for the image's own
    tree), its message saying so."""
    took = _image_tree("index_s", open_box, workdir, state, lambda box: index_image_tree(box, workdir, exc.budget))
    if took is not None and took * CARRY_MARGIN <= exc.budget:
        raise CarryOutgrown(f"{exc}; the image's own tree took {took:.2f} s", took) from None
    own = "did not finish in that time either" if took is None else f"took {took:.2f} s of it"
    raise IsolationError(f"{exc}; the image's own tree {own} (not the change's doing)") from None


@dataclass(frozen=True)
class Baseline:
    """How a task's verifier ended on its image as built, without any change: "finished" (in `took` seconds, the
    canary read as `canary`, `outlived` processes still running when test.sh exited, its exit code `exit_code`),
    "timed_out", or another error's name."""

    end: str
    took: float | None = None
    canary: str | None = None
    outlived: int = 0
    exit_code: int | None = None
    footprint: dict[str, str] | None = None  # graded by its reward file in a fresh container (verify/footprint.py)
    failing: frozenset[str] = frozenset()  # the tests pytest's per-test lines report failing (runner.failing_tests)


# Per process, keyed by (task, verifier hash, image id, with a canary or not); a task's baseline runs once (its
# lock: trials of one task that need it together wait for the same run), however many of its trials need it.
_BASELINES: dict[tuple[str, str, str, bool], Baseline] = {}
_BASELINE_LOCKS: dict[tuple[str, str, str, bool], threading.Lock] = {}


def baseline(task: TaskSpec, open_box: Callable[[int], Box], state: TrialNotes, witness: bool = False) -> Baseline:
    """The task's verifier once on its image as built (`witness`: with a canary planted, verify/runner.verify)."""
    key = (task.task_id, task.verifier_hash, state.image_id, witness)
    with _BASELINE_LOCKS.setdefault(key, threading.Lock()):
        if key not in _BASELINES:
            # set where the verifier's container is a fresh one (isolation "diff"); only changed_outside reads it, on
            # the baseline without a canary
            workdir = state.workdir
            read = footprints.reader(task, workdir, resolving=False) if workdir and not witness else None
            base = grade(task, open_box, lambda b: remove_box(b, state), tries=1, witness=witness, footprint=read)
            if base.verdict is not None:
                v = base.verdict
                _BASELINES[key] = Baseline(
                    "finished", v.duration_s, v.canary_seen, v.outlived, v.exit_code, base.footprint,
                    failing_tests(v.log, v.canary),
                )  # fmt: skip
            else:
                timed_out = base.error is not None and base.error.kind == ErrorKind.VERIFIER_TIMEOUT
                _BASELINES[key] = Baseline("timed_out" if timed_out else base.error.kind if base.error else "unknown")
    return _BASELINES[key]


def hang(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """Both tries of the verifier ran past its timeout with the agent's change: run it once without the change.
    Finished in time there, the hang is the change's (tests that never end are failing tests, as swebench's
    harness counts them): graded 0, HungWithChangeError, tagged `hung_with_change`; timed out there too, the task
    hangs anyway (SWE-bench's sklearn-14710 does): verifier_timeout, not graded, tagged `hangs_without_change`;
    any other end of that run proves nothing either way: verifier_timeout, untagged."""
    base = baseline(task, open_box, state)
    grading.notes.without_change = WithoutChange(end=base.end, duration_s=base.took)
    if base.end == "timed_out":
        state.tags.append("hangs_without_change")
    elif base.end == "finished" and base.took is not None:
        state.tags.append("hung_with_change")
        limit = f"{task.verifier_timeout:g}"
        grading.verdict = Verdict(reward=0.0, graded_by="timeout", log=grading.log)
        took = f"{base.took:.1f}"
        grading.error = ErrorNote(ErrorKind.HUNG_WITH_CHANGE, f"test.sh ran past its {limit} s timeout twice with "
                                  f"the agent's change; on the image as built it finished in {took} s")  # fmt: skip


def missing_reward(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """Both tries of test.sh ended without a reward file with the agent's change. Written without the change, the
    change stopped it (the code under test replaced /logs by a file, say; tests/harness/cheats/
    logs_replaced_at_import.sh): NoRewardWithChangeError; missing there too, the task writes none anyway."""
    _charge_the_change(task, open_box, grading, state, "reward_missing_with_change", "reward_file", ErrorNote(
        ErrorKind.NO_REWARD_WITH_CHANGE, "test.sh wrote no reward with the agent's change (both tries); on the image"
        " as built it wrote one"))  # fmt: skip


def limits(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """The tests hit the sandbox's memory or pids limit with the agent's change. Within them without the change, the
    change made the tests outgrow them (code under test allocating, forking; tests/harness/cheats/
    memory_hog_at_import.sh): LimitsHitWithChangeError, as a test killed for memory fails in swebench's harness; hit
    there too, the task's limits are too tight for its own tests: SandboxLimitError, ungraded."""
    message = grading.error.message if grading.error else "the sandbox's limits were hit"
    _charge_the_change(task, open_box, grading, state, "limits_hit_with_change", "limits", ErrorNote(
        ErrorKind.LIMITS_HIT_WITH_CHANGE, f"{message} with the agent's change; on the image as built the tests ran"
        " within them"))  # fmt: skip


def _charge_the_change(
    task: TaskSpec,
    open_box: Callable[[int], Box],
    grading: Grading,
    state: TrialNotes,
    tag: str,
    graded_by: str,
    error: ErrorNote,
) -> None:
    """A failure that would leave the trial ungraded: the verifier once without the change (the task's baseline).
    Finished there, the failure is the change's: graded 0 with `error`, tagged `tag`, not an ungraded infra error a
    policy could learn to reach for; any other end there, the failure stands as it was."""
    base = baseline(task, open_box, state)
    grading.notes.without_change = WithoutChange(end=base.end, duration_s=base.took)
    if base.end == "finished":
        state.tags.append(tag)
        grading.verdict = Verdict(reward=0.0, graded_by=graded_by, log=grading.log)
        grading.error = error


def reward_file(
    task: TaskSpec,
    without_change: Callable[[int], Box],
    grading: Grading,
    state: TrialNotes,
    witness: Callable[[], Grading] | None = None,
) -> None:
    """What a reward file says (or does not), weighed against the image as built, in either isolation: none written
    (missing_reward), one test.sh may not have written last (untrusted_reward), one read where the code under test
    changed what test.sh may run after the tests (changed_outside; a fresh container's only), one the canaries do not
    lower (unwitnessed_reward: the witness run beside the graded try, `witness`); and the grading half's strict checks
    (docs/threat-model.md): the tests failing on the image as built (not_gold_reward), the exit status against
    pytest's report (runner.exit_disagrees)."""
    if grading.error is not None and grading.error.kind == ErrorKind.REWARD_FILE_NOT_FOUND:
        missing_reward(task, without_change, grading, state)
    untrusted_reward(task, without_change, grading, state)
    changed_outside(task, without_change, grading, state)
    not_gold_reward(task, without_change, grading, state)
    if grading.verdict is not None and grading.verdict.exit_disagrees and grading.verdict.reward >= 1.0:
        grading.verdict = grading.verdict.model_copy(update={"reward": 0.0})  # runner.exit_disagrees
    unwitnessed_reward(task, without_change, grading, state, witness)


def not_gold_reward(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """A reward file's strict verdict, anchored to the image as built: a resolving reward, from a log with pytest's
    per-test lines, in which a test reported failing without the change is not reported PASSED with it (xfailed,
    skipped or not run: the code under test called `pytest.xfail()` or `pytest.skip()` on the branch it gets wrong,
    and pytest exits 0 for both) is graded 0, tagged `status_not_gold` (verify/grading.strict_verdict's rule where
    no gold run is recorded: the tests the task exists to fix must pass)."""
    verdict = grading.verdict
    if verdict is None or verdict.graded_by != "reward_file" or verdict.reward < 1.0 or not per_test_lines(verdict.log):
        return
    base = baseline(task, open_box, state)
    passed = passing_tests(verdict.log)
    off = {test: "not PASSED" for test in sorted(base.failing - passed)}
    if off:
        grading.notes.not_gold = dict(list(off.items())[:200])
        grading.verdict = verdict.model_copy(update={"reward": 0.0, "not_gold": off, "official_reward": verdict.reward})


def untrusted_reward(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """A positive reward read from the reward file that test.sh may not have been the last to write: processes of the
    test run outlived test.sh (any of them could have replaced the file after test.sh wrote its own, before the
    harness killed them: tests/harness/cheats/reward_rewriter.sh), or test.sh died of a signal (exit above 128) with
    a reward file there (the code under test wrote one, then killed test.sh before it could write its own:
    tests/harness/cheats/reward_then_kill.sh). Run the verifier once without the change. test.sh ends by itself
    there: graded 0 as a verifier killed from inside (tagged `verifier_killed`; that first, the killer may outlive
    test.sh); nothing outlives test.sh there: graded 0, OutlivedWithChangeError, tagged `outlived_with_change`.
    Otherwise (the task's own tests leave processes, its test.sh exits above 128 anyway, or it did not finish) the
    grade stands. A log graded per test is read up to the verifier's end marker, which nothing alive can print
    after, so only a reward file needs this."""
    verdict = grading.verdict
    if verdict is None or verdict.graded_by != "reward_file" or verdict.reward <= 0:
        return
    signalled = (verdict.exit_code or 0) > 128
    if not verdict.outlived and not signalled:
        return
    base = baseline(task, open_box, state)
    grading.notes.without_change = WithoutChange(
        end=base.end, duration_s=base.took, outlived=base.outlived, exit_code=base.exit_code
    )
    if base.end != "finished":
        return
    if signalled and (base.exit_code or 0) <= 128:
        grading.verdict = verdict.model_copy(update={"reward": 0.0, "killed": True})
    elif verdict.outlived and base.outlived == 0:
        state.tags.append("outlived_with_change")
        grading.verdict = verdict.model_copy(update={"reward": 0.0})
        grading.error = ErrorNote(ErrorKind.OUTLIVED_WITH_CHANGE, f"{verdict.outlived} process(es) of the test run "
                                  "outlived test.sh with the agent's change, any of which could have rewritten its "
                                  "reward file; on the image as built none did")  # fmt: skip


def changed_outside(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """A positive reward read from the reward file of a fresh verifier container that the run left changed outside
    the working tree and the places a run may write (verify/footprint.py: the container's own layer, read from
    outside it; /tests by content): test.sh may run a tool of the image or a script of its tests after the tests,
    which the code under test could have replaced (python3 made to answer 1 for the grader:
    tests/harness/cheats/python_replaced_at_import.sh; the grader itself rewritten: grader_rewritten.sh). Compared
    with the verifier once without the change: a path left otherwise there (one the task's own test.sh does not
    change the same way) grades the trial 0, ChangedOutsideTreeError, tagged `changed_outside_tree`. A baseline that
    did not finish leaves the grade as it is."""
    verdict = grading.verdict
    if verdict is None or verdict.graded_by != "reward_file" or verdict.reward <= 0 or grading.footprint is None:
        return
    base = baseline(task, open_box, state)
    if base.end != "finished" or base.footprint is None:
        return
    paths = footprints.introduced(grading.footprint, base.footprint)
    if not paths:
        return
    grading.notes.changed_outside_tree = paths[:20]
    state.tags.append("changed_outside_tree")
    grading.verdict = verdict.model_copy(update={"reward": 0.0})
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    grading.error = ErrorNote(ErrorKind.CHANGED_OUTSIDE_TREE, f"with the agent's change the tests left {shown} changed "
                              "outside the working tree, which they do not on the image as built (any could change "
                              "what test.sh ran after the tests)")  # fmt: skip


def unwitnessed_reward(
    task: TaskSpec,
    without_change: Callable[[int], Box],
    grading: Grading,
    state: TrialNotes,
    witness: Callable[[], Grading] | None = None,
) -> None:
    """Resolved by a reward file, whose verifier decides by itself what a failure is: no canary rides along (it would
    fail an honest run too; the graded run holds look-alikes that pass instead, verify/runner.lookalikes), so the
    verifier runs once more with the change and canaries, tests that must fail planted among the test modules its
    command names (verify/canary.py, verify/decoys.py): the witness run started beside the graded try whose grade
    this is, in a fresh container of its own (`witness`: its result, verify/witness.py; None: the change could not
    be carried into one, `isolation = "container"` without a known working tree: tagged `unwitnessed`, as where no
    canary can be planted, and the grade stands). The canaries are read from every channel of that run
    (runner.witness_reading). Reported failing, with a reward that drops or not: the runner reports truthfully and the
    grade stands. Reported passing: the runner was made to pass what fails (pytest's test call made a no-op:
    tests/harness/cheats/runner_noop.sh); not read as failing (missing, skipped: a channel absent or bent, a summary
    line with a suffix) with a reward that did not drop, while they are read failing on the image as built: the
    change hid them (the test process ended with status 0 before any test ran: tests/harness/cheats/exit0_at_import.sh).
    Either way graded 0, tagged `runner_subverted`. A witness without a verdict (it raised, timed out, hit the limits,
    wrote no reward) leaves no grade: the trial ends with the witness's error, never resolved unwitnessed."""
    verdict = grading.verdict
    if verdict is None or verdict.graded_by != "reward_file" or verdict.reward < 1.0:
        return
    if verdict.canary:  # one run (verify/onerun.py): the graded run held the canaries itself, its own witness
        control: Grading = grading
    elif not witnessable(task) or witness is None:  # no canary can be planted, or no fresh container: `audit` counts it
        state.tags.append("unwitnessed")
        return
    else:
        control = witness()
    got = control.verdict
    seen = WitnessRun(reward=got.reward if got else None, canary=got.canary_seen if got else None)
    grading.notes.witness = seen
    if control is grading:
        seen["same_run"] = True
    if control.notes.raised is not None:
        seen["raised"] = control.notes.raised
    if got is None:  # no witness, no grade: never a resolved trial that nothing witnessed
        error = control.error or ErrorNote(ErrorKind.ISOLATION, "the witness run ended without a verdict")
        seen["error"] = error.kind
        grading.verdict, grading.error = None, ErrorNote(error.kind, f"the witness run: {error.message}")
        return
    if got.rewards_not_files:  # the change left a reward path no plain file in the witness: charged as in a graded run
        grading.verdict = verdict.model_copy(update={"reward": 0.0, "rewards_not_files": got.rewards_not_files})
        return
    if got.exit_disagrees:  # the canary reported failing, the exit status said success
        grading.verdict = verdict.model_copy(update={"reward": 0.0, "exit_disagrees": True})
        return
    # a canary reported passing is a subversion whatever the reward: with several canaries a cheat that spares some
    # lowers the reward through the others (verify/decoys.py: tests/verify/attacks/grading/spare_by_name.sh)
    if got.canary_seen == canaries.FAILED:
        return
    if got.reward < verdict.reward and got.canary_seen != canaries.PASSED:
        return
    canary_seen = got.canary_seen
    if canary_seen != canaries.PASSED:
        base = baseline(task, without_change, state, witness=True)
        seen["without_change"] = base.canary
        if base.canary != canaries.FAILED:
            return
        canary_seen = canaries.HIDDEN
    grading.verdict = verdict.model_copy(update={"reward": 0.0, "canary": got.canary, "canary_seen": canary_seen})


def missing_canary(task: TaskSpec, open_box: Callable[[int], Box], grading: Grading, state: TrialNotes) -> None:
    """Resolved with the change while the log has no failing report of the verifier's canary: run it once without
    the change. There the canary reported failing, so the runner reports it unless the change stops that (PASSED
    lines written to the test process's real stdout, then an exit before pytest reports): graded as failing, the
    canary read as "hidden", tagged `runner_subverted`. Otherwise the runner does not report it anyway (its
    settings): the grade stands, tagged `canary_missing` (verify/canary.py)."""
    base = baseline(task, open_box, state)
    grading.notes.without_change = WithoutChange(end=base.end, duration_s=base.took, canary=base.canary)
    if grading.verdict is not None and base.canary == canaries.FAILED:
        grading.verdict = grading.verdict.model_copy(update={"reward": 0.0, "canary_seen": canaries.HIDDEN})

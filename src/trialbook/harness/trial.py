"""One trial: sandbox -> agent -> verifier -> a Trial record, under the error policy.

Infra failures are retried with exponential backoff (policy `retry`); an agent that stops
early (timeout, context overflow) is still graded; a verifier timeout is never graded.
The container is always removed, whatever happens.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from trialbook.agents.base import Agent, AgentResult, AgentStopped
from trialbook.harness.isolation import (
    CarryOutgrown,
    CarryTimeout,
    Change,
    Grading,
    IsolationError,
    LimitHit,
    apply_change,
    base_preparer,
    capture,
    change_too_large,
    grade,
    image_tree_bytes,
    index_image_tree,
    restore_container,
    workdir_of,
)
from trialbook.harness.paths import TRIAL_PREFIX
from trialbook.outcomes import FINDINGS, POLICY, classify, error_kind, rule_for
from trialbook.records import Outcome, Trial, is_graded
from trialbook.sandbox import DockerEngine, Sandbox, SandboxError
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.sandbox.docker import LABEL_RUN, LABEL_TASK, LABEL_TRIAL, slug
from trialbook.tasks import TaskError, TaskSpec
from trialbook.verify import canary as canaries
from trialbook.verify.runner import Verdict, witnessable

TRY_STATE = ("agent_result", "verifier_log", "image", "verifier", "patch", "tags", "agent_limit_hits")
LOG_LIMIT = 200_000  # characters of a log kept in the ledger (the tail)
AGENT_GRACE_S = 1.0  # an agent's own timeout handling gets this long before the harness cuts its execs


class DeadlineExceeded(Exception):
    pass


class Interrupted(Exception):
    """The run was interrupted (Ctrl-C): the trial is not recorded, so `resume` runs it again."""


@dataclass
class Stopper:
    """Shared by every trial of a run: `deadline` and `interrupt` stop running execs."""

    event: threading.Event = field(default_factory=threading.Event)
    reason: str | None = None

    def fire(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.event.set()

    def check(self) -> None:
        if self.reason == "interrupt":
            raise Interrupted()
        if self.event.is_set():
            raise DeadlineExceeded("the run's --deadline passed")


@dataclass
class TrialSettings:
    run: str
    agent: Agent
    timeout_multiplier: float = 1.0
    retries: int = 2
    backoff_s: float = 2.0
    labels: dict[str, str] = field(default_factory=dict)  # on every container: the ledger's id, the run's id


@dataclass
class TrialResult:
    trial: Trial
    name: str
    agent_log: str = ""
    verifier_log: str = ""
    image: tuple[str, str] | None = None  # (reference, id)
    extra_files: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def trial_name(run: str, task_id: str, attempt: int) -> str:
    """`tb-<run>-<task>-<attempt>-<8hex>`: the container name (and the trial folder name)."""
    return f"{TRIAL_PREFIX}{slug(run, 30)}-{slug(task_id, 60)}-{attempt}-{secrets.token_hex(4)}"


def _invalid(task: TaskError, attempt: int, name: str, agent: str) -> TrialResult:
    now = _now()
    trial = Trial(
        task_id=task.task_id,
        attempt=attempt,
        outcome=Outcome.INFRA_ERROR,
        exception="InvalidTaskError",
        exception_message=task.message,
        started_at=now,
        finished_at=now,
        extra={"trial_name": name, "agent": agent},  # validate counts it as that agent's trial that could not run
    )
    return TrialResult(trial, name)


def run_trial(
    engine: DockerEngine, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
) -> TrialResult:
    name = trial_name(settings.run, task.task_id, attempt)
    if isinstance(task, TaskError):
        return _invalid(task, attempt, name, settings.agent.name)
    started, t0 = _now(), time.monotonic()
    state: dict[str, Any] = {"phase_s": {}, "retries": 0}
    exc_type: str | None = None
    exc_msg: str | None = None
    verdict: Verdict | None = None
    for k in range(settings.retries + 1):
        state["retries"] = k
        for key in TRY_STATE:  # nothing from a failed try leaks into the record
            state.pop(key, None)
        try:
            stopper.check()
            verdict, exc_type, exc_msg = _attempt(engine, task, attempt, name, settings, stopper, state)
            break
        except DeadlineExceeded as exc:
            exc_type, exc_msg = "DeadlineExceeded", str(exc)
            break
        except Interrupted:
            raise
        except Exception as exc:  # the policy table says which errors are retried; a harness bug costs one trial
            exc_type = error_kind(exc)
            exc_msg = str(exc) if exc_type in POLICY else f"unexpected: {exc}"
            if not rule_for(exc_type).retry or k == settings.retries or stopper.event.is_set():
                break
            stopper.event.wait(settings.backoff_s * 2**k)
            name = trial_name(settings.run, task.task_id, attempt)
    outcome, reward = _classify(exc_type, verdict)
    tags = ["p2p_regression"] if verdict is not None and verdict.p2p_regression else []
    tags += state.get("tags", [])
    if verdict is not None and verdict.conflicts:
        tags.append("conflicting_test_reports")
    if verdict is not None and verdict.outlived:
        tags.append("test_processes_outlived")
    if verdict is not None and verdict.killed:
        tags.append("verifier_killed")
    if verdict is not None and verdict.foreign_rewards:
        tags.append("foreign_reward_file")  # left unread: the task's tests never name it
    if verdict is not None and verdict.output_cut:
        tags.append("verifier_output_cut")  # past LOG_DISK_LIMIT: graded on its head and tail
    if verdict is not None and verdict.canary_seen in canaries.SUBVERTED:
        tags.append("runner_subverted")  # the test that must fail passed, or was hidden (verify/canary.py): failing
    elif verdict is not None and verdict.canary_seen in canaries.UNSEEN and outcome == Outcome.RESOLVED:
        tags.append("canary_missing")
    if exc_type is None:
        exc_type = next((finding for finding in FINDINGS if finding in tags), None)
        exc_msg = FINDINGS.get(exc_type or "")
    extra = {
        "trial_name": name,
        "agent": settings.agent.name,
        "timeout_multiplier": settings.timeout_multiplier,
        "agent_timeout_s": task.agent_timeout * settings.timeout_multiplier,
        "verifier_timeout_s": task.verifier_timeout,
        "retries": state["retries"],
        "phase_s": state["phase_s"],
        "verifier_hash": task.verifier_hash,
        "tags": tags,
    }
    for key in ("cleanup_error", "verifier", "agent_limit_hits"):
        if state.get(key):
            extra[key] = state[key]
    if state.get("image"):
        extra["image"], extra["image_id"] = state["image"]
    agent_result: AgentResult | None = state.get("agent_result")
    if agent_result is not None:
        extra["agent_exit_code"] = agent_result.exit_code
        extra.update({"agent_info": agent_result.info} if agent_result.info else {})
        extra.update({"files": sorted(f"agent/{n}" for n in agent_result.files)} if agent_result.files else {})
    if verdict is not None:
        extra.update(graded_by=verdict.graded_by, file_reward=verdict.file_reward, test_exit_code=verdict.exit_code)
        extra.update({"conflicting_tests": verdict.conflicts} if verdict.conflicts else {})
        extra.update({"outlived_processes": verdict.outlived} if verdict.outlived else {})
        extra.update({"foreign_reward_files": verdict.foreign_rewards} if verdict.foreign_rewards else {})
        extra.update({"canary": {"name": verdict.canary, "seen": verdict.canary_seen}} if verdict.canary else {})
    trial = Trial(
        task_id=task.task_id,
        attempt=attempt,
        repo=task.repo,
        outcome=outcome,
        reward=reward,
        exception=exc_type,
        exception_message=(exc_msg or "")[:2000] or None,
        duration_s=round(time.monotonic() - t0, 3),
        turns=agent_result.turns if agent_result else None,
        tokens=agent_result.tokens if agent_result else None,
        tests=verdict.tests if verdict else None,
        started_at=started,
        finished_at=_now(),
        extra=extra,
    )
    return TrialResult(
        trial,
        name,
        agent_log=agent_result.log[-LOG_LIMIT:] if agent_result else "",
        verifier_log=state.get("verifier_log", "")[-LOG_LIMIT:],
        image=state.get("image"),
        extra_files={**(agent_result.files if agent_result else {}), **_patch_file(state)},
    )


def _patch_file(state: dict[str, Any]) -> dict[str, str]:
    """The agent's change as the verifier applied it: agent/patch.diff and the `patch.diff` artifact."""
    return {"patch.diff": state["patch"]} if state.get("patch") else {}


def _classify(exc_type: str | None, verdict: Verdict | None) -> tuple[Outcome, float | None]:
    outcome = classify(exc_type, verdict.reward if verdict else None)
    return outcome, (verdict.reward if verdict and is_graded(outcome) else None)


def _attempt(
    engine: DockerEngine,
    task: TaskSpec,
    attempt: int,
    name: str,
    settings: TrialSettings,
    stopper: Stopper,
    state: dict[str, Any],
) -> tuple[Verdict | None, str | None, str | None]:
    """One try in a fresh container. Returns (verdict, exception type, message); raises SandboxError."""
    phases = state["phase_s"]
    t = time.monotonic()
    state["image"] = engine.ensure_image(
        task.task_id, task.image, task.dockerfile.parent, task.environment_hash, settings.run, task.allow_network,
        settings.labels,
    )  # fmt: skip
    labels = {**settings.labels, LABEL_RUN: settings.run, LABEL_TRIAL: name, LABEL_TASK: task.task_id}

    def start(box_name: str, prepare: tuple[str, Callable[[Sandbox], Any]] | None = None) -> Sandbox:
        return engine.start(
            state["image"][0], box_name, labels, task.cpus, task.memory_mb, task.pids_limit, task.allow_network,
            stopper.event, env=task.env, workdir=task.workdir, shell_setup=task.shell_setup, prepare=prepare,
        )  # fmt: skip

    box = start(name)
    if task.isolation == "diff":  # the verifier's containers warm (and prepare) while the agent works
        with contextlib.suppress(IsolationError):  # no workdir: the trial meets it after the agent, as before
            prep = _verifier_prep(engine, task, state)
            engine.ahead(
                state["image"][0], labels, task.cpus, task.memory_mb, task.pids_limit, task.allow_network,
                env=task.env, workdir=task.workdir, shell_setup=task.shell_setup, prepare=prep,
            )  # fmt: skip
    phases["environment_setup"] = round(time.monotonic() - t, 3)
    exc_type: str | None = None
    exc_msg: str | None = None
    change: Change | None = None
    try:
        t = time.monotonic()
        budget = task.agent_timeout * settings.timeout_multiplier
        box.until = t + budget + AGENT_GRACE_S  # enforced on every exec, even if an agent ignores its timeout
        try:
            state["agent_result"] = settings.agent.run(box, task, budget)
        except AgentStopped as stop:
            stopper.check()  # a deadline or interrupt, not the agent's own limit
            state["agent_result"] = stop.result
            exc_type, exc_msg = type(stop).__name__, str(stop)
        finally:
            box.until = None
        phases["agent_execution"] = round(time.monotonic() - t, 3)
        if exc_type is None and phases["agent_execution"] > budget + AGENT_GRACE_S:
            exc_type, exc_msg = "AgentTimeoutError", f"agent returned after its {budget:g} s budget"
        stopper.check()
        if hits := box.limit_hits():  # the agent's own limit hits are its business: it is still graded
            state["agent_limit_hits"] = hits
        t = time.monotonic()
        try:
            if task.isolation == "container":
                grading = _grade_container(box, task, stopper, lambda _k: start(f"{name}-b"), state)
            else:
                workdir = workdir_of(engine, task, state["image"][0])
                try:
                    change = capture(box, workdir)
                except TreeTooLargeError as exc:
                    _remove(box, state)
                    grading = _blame_big_tree(exc, lambda: start(f"{name}-i"), workdir, state)
                else:
                    _remove(box, state)
                    grading = _grade_diff(start, name, change, task, stopper, state)
        finally:
            phases["verifier"] = round(time.monotonic() - t, 3)
        state["verifier_log"] = grading.log
        state["verifier"] = {"isolation": task.isolation, "tries": grading.tries, **grading.extra}
        if grading.error is not None:
            if grading.error[0] == "VerifierTimeoutError":
                stopper.check()  # a deadline or interrupt cut the verifier: not its own timeout
            return grading.verdict, *grading.error  # a verdict only for a hang the change caused (_blame_hang)
        return grading.verdict, exc_type, exc_msg
    finally:
        _remove(box, state)
        if change is not None:
            change.tree.close()


def _verifier_prep(engine: DockerEngine, task: TaskSpec, state: dict[str, Any]) -> tuple[str, Callable[[Sandbox], Any]]:
    """What a warm verifier container computes while it waits: the image's side of the agent's diff."""
    return "verifier", base_preparer(workdir_of(engine, task, state["image"][0]), task.verifier_timeout)


def _remove(box: Sandbox, state: dict[str, Any]) -> None:
    try:
        box.remove()
    except SandboxError as exc:  # the trial's result stands; `clean` finds the leftover
        state["cleanup_error"] = str(exc)


def _grade_container(
    box: Sandbox, task: TaskSpec, stopper: Stopper, fresh: Callable[[int], Sandbox], state: dict[str, Any]
) -> Grading:
    """`isolation = "container"`: graded in the agent's own container, restored before each run; what a reward file
    says is checked against the verifier in a `fresh` container from the image (without the agent's work), as a
    diff's grade is."""

    def reopen(_k: int) -> Sandbox:
        stopper.check()
        restore_container(box, task)
        return box

    grading = grade(task, reopen, lambda _b: None)
    if grading.error is not None and grading.error[0] == "RewardFileNotFoundError":
        _blame_missing_reward(task, fresh, grading, state)
    _blame_untrusted_reward(task, fresh, grading, state)
    _blame_unwitnessed_reward(task, reopen, fresh, grading, state, close=lambda _b: None)
    return grading


def _grade_diff(
    start: Callable[..., Sandbox], name: str, change: Change, task: TaskSpec, stopper: Stopper, state: dict[str, Any]
) -> Grading:
    """Grade the agent's diff in fresh containers; a test-infrastructure change is also graded without it."""

    prepare = ("verifier", base_preparer(change.workdir, task.verifier_timeout))  # as _verifier_prep

    def opener(suffix: str, exclude: list[str] | None) -> Callable[[int], Sandbox]:
        """Fresh verifier boxes with the change applied minus `exclude` (None: the image as built)."""

        def open_box(k: int) -> Sandbox:
            stopper.check()
            vbox = start(f"{name}-{suffix}{k}", prepare)
            try:
                if exclude is not None:
                    apply_change(vbox, change, task, exclude, task.verifier_timeout)
            except IsolationError as exc:
                hits = vbox.limit_hits()
                _remove(vbox, state)
                if hits:  # the task's own limits stopped the harness's git: on the image's tree, not the agent's doing
                    raise LimitHit(hits, exc.agent_side) from None
                if isinstance(exc, CarryTimeout) and exc.agent_side:
                    _blame_slow_carry(exc, lambda: start(f"{name}-i", prepare), change.workdir, state)
                raise
            except BaseException:
                _remove(vbox, state)
                raise
            return vbox

        return open_box

    grading = grade(task, opener("v", []), lambda b: _remove(b, state))
    state["patch"] = change.patch
    if change.too_long:
        grading.extra["paths_too_long"] = change.too_long
    if grading.error is not None and grading.error[0] == "VerifierTimeoutError" and change.files:
        _blame_hang(task, opener("b", None), grading, state)
    if grading.error is not None and grading.error[0] == "RewardFileNotFoundError" and change.files:
        _blame_missing_reward(task, opener("b", None), grading, state)
    if grading.error is not None and grading.extra.get("limits_hit_in_tests") and change.files:
        _blame_limits(task, opener("b", None), grading, state)
    if change.files:
        _blame_untrusted_reward(task, opener("b", None), grading, state)
        _blame_unwitnessed_reward(task, opener("w", []), opener("b", None), grading, state)
    verdict = grading.verdict
    if verdict is not None and verdict.reward >= 1.0 and verdict.canary_seen in canaries.UNSEEN and change.files:
        _blame_missing_canary(task, opener("b", None), grading, state)
    if not change.test_infra:
        return grading
    state.setdefault("tags", []).append("test_infra_changed")
    grading.extra["test_infra_files"] = change.test_infra
    if grading.verdict is not None and grading.verdict.reward >= 1.0:
        control = grade(task, opener("c", change.test_infra), lambda b: _remove(b, state))
        reward = control.verdict.reward if control.verdict else None
        grading.extra["control"] = {"reward": reward, "error": control.error[0] if control.error else None}
        if reward is None or reward < 1.0:  # resolved only with the agent's own test infrastructure
            grading.verdict = grading.verdict.model_copy(update={"reward": reward or 0.0, "tests": None})
            grading.extra["control"]["log_tail"] = control.log[-2000:]
    return grading


CARRY_MARGIN = 10  # a carry that times out is the change's doing when the image's own tree takes <= 1/10 of its time
# Per process, keyed by (what, image id, working tree): the image's own tree measured once, in a fresh container, the
# first time a trial needs it: "index_s", seconds the harness's git takes to index it (None: not within a carry's
# time); "bytes", its size as an archive (None: past SNAPSHOT_LIMIT)
_IMAGE_TREE: dict[tuple[str, str, str], Any] = {}
_IMAGE_TREE_LOCK = threading.Lock()


def _image_tree(
    what: str, open_box: Callable[[], Sandbox], workdir: str, state: dict[str, Any], measure: Callable[[Sandbox], Any]
) -> Any:
    key = (what, state["image"][1], workdir)
    with _IMAGE_TREE_LOCK:
        if key not in _IMAGE_TREE:
            box = open_box()
            try:
                _IMAGE_TREE[key] = measure(box)
            finally:
                _remove(box, state)
    return _IMAGE_TREE[key]


def _blame_big_tree(
    exc: TreeTooLargeError, open_box: Callable[[], Sandbox], workdir: str, state: dict[str, Any]
) -> Grading:
    """The agent's working tree ran past the limit of a copy (sandbox/box.SNAPSHOT_LIMIT) as an archive. With the
    image's own tree at most half of it, the agent's tree is what grew (a sparse file of a terabyte, no disk behind
    it: tests/harness/test_carry_timeout.py): graded 0 as ChangeTooLargeError, not an ungraded infra error;
    otherwise the image's own tree is too big to carry: IsolationError."""
    size = _image_tree("bytes", open_box, workdir, state, lambda box: image_tree_bytes(box, workdir))
    if size is not None and 2 * size <= exc.limit:
        message = f"{exc}; the image's own tree: {size:,} bytes"
        return change_too_large(Grading(extra={"image_tree_bytes": size}), message)
    own = "over it too" if size is None else f"{size:,} bytes, over half of it"
    raise IsolationError(f"{exc}; the image's own tree is {own}") from None


def _blame_slow_carry(exc: CarryTimeout, open_box: Callable[[], Sandbox], workdir: str, state: dict[str, Any]) -> None:
    """Carrying the agent's change ran past its time once the image's side was done. When the harness indexes the
    image's own tree in a tenth of that time (or less), the agent's tree is what took it (300,000 files, say:
    tests/harness/test_carry_timeout.py): CarryOutgrown, graded 0 as ChangeTooLargeError, not an ungraded infra error
    a policy could learn to reach for; otherwise the IsolationError stands (the sandbox is too slow for the image's own
    tree), its message saying so."""
    took = _image_tree("index_s", open_box, workdir, state, lambda box: index_image_tree(box, workdir, exc.budget))
    if took is not None and took * CARRY_MARGIN <= exc.budget:
        raise CarryOutgrown(f"{exc}; the image's own tree took {took:.2f} s", {"image_tree_index_s": took}) from None
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


# Per process, keyed by (task, verifier hash, image id); a task's baseline runs once (its lock: trials of one task
# that need it together wait for the same run), however many of its trials need it.
_BASELINES: dict[tuple[str, str, str, bool], Baseline] = {}
_BASELINE_LOCKS: dict[tuple[str, str, str, bool], threading.Lock] = {}


def _baseline(
    task: TaskSpec, open_box: Callable[[int], Sandbox], state: dict[str, Any], witness: bool = False
) -> Baseline:
    """The task's verifier once on its image as built (`witness`: with a canary planted, verify/runner.verify)."""
    key = (task.task_id, task.verifier_hash, state["image"][1], witness)
    with _BASELINE_LOCKS.setdefault(key, threading.Lock()):
        if key not in _BASELINES:
            base = grade(task, open_box, lambda b: _remove(b, state), tries=1, witness=witness)
            if base.verdict is not None:
                v = base.verdict
                _BASELINES[key] = Baseline("finished", v.duration_s, v.canary_seen, v.outlived, v.exit_code)
            else:
                _BASELINES[key] = Baseline("timed_out" if base.error and base.error[0] == "VerifierTimeoutError"
                                           else (base.error or ("unknown",))[0])  # fmt: skip
    return _BASELINES[key]


def _blame_hang(task: TaskSpec, open_box: Callable[[int], Sandbox], grading: Grading, state: dict[str, Any]) -> None:
    """Both tries of the verifier ran past its timeout with the agent's change: run it once without the change.
    Finished in time there, the hang is the change's (tests that never end are failing tests, as swebench's
    harness counts them): graded 0, HungWithChangeError, tagged `hung_with_change`; timed out there too, the task
    hangs anyway (the seed's sklearn-14710): verifier_timeout as before, not graded, tagged `hangs_without_change`;
    any other end of that run proves nothing either way: verifier_timeout, untagged."""
    base = _baseline(task, open_box, state)
    grading.extra["without_change"] = {"end": base.end, "duration_s": base.took}
    if base.end == "timed_out":
        state.setdefault("tags", []).append("hangs_without_change")
    elif base.end == "finished" and base.took is not None:
        state.setdefault("tags", []).append("hung_with_change")
        limit = f"{task.verifier_timeout:g}"
        grading.verdict = Verdict(reward=0.0, graded_by="timeout", log=grading.log)
        grading.error = ("HungWithChangeError", f"test.sh ran past its {limit} s timeout twice with the agent's "
                         f"change; on the image as built it finished in {base.took:.1f} s")  # fmt: skip


def _blame_missing_reward(
    task: TaskSpec, open_box: Callable[[int], Sandbox], grading: Grading, state: dict[str, Any]
) -> None:
    """Both tries of test.sh ended without a reward file with the agent's change. Written without the change, the
    change stopped it (the code under test replaced /logs by a file, say; tests/harness/cheats/
    logs_replaced_at_import.sh): NoRewardWithChangeError; missing there too, the task writes none anyway."""
    _charge_the_change(task, open_box, grading, state, "reward_missing_with_change", "reward_file", (
        "NoRewardWithChangeError", "test.sh wrote no reward with the agent's change (both tries); on the image as "
        "built it wrote one"))  # fmt: skip


def _blame_limits(task: TaskSpec, open_box: Callable[[int], Sandbox], grading: Grading, state: dict[str, Any]) -> None:
    """The tests hit the sandbox's memory or pids limit with the agent's change. Within them without the change, the
    change made the tests outgrow them (code under test allocating, forking; tests/harness/cheats/
    memory_hog_at_import.sh): LimitsHitWithChangeError, as a test killed for memory fails in swebench's harness; hit
    there too, the task's limits are too tight for its own tests: SandboxLimitError, ungraded."""
    message = grading.error[1] if grading.error else "the sandbox's limits were hit"
    _charge_the_change(task, open_box, grading, state, "limits_hit_with_change", "limits", (
        "LimitsHitWithChangeError", f"{message} with the agent's change; on the image as built the tests ran within "
        "them"))  # fmt: skip


def _charge_the_change(
    task: TaskSpec,
    open_box: Callable[[int], Sandbox],
    grading: Grading,
    state: dict[str, Any],
    tag: str,
    graded_by: str,
    error: tuple[str, str],
) -> None:
    """A failure that would leave the trial ungraded: the verifier once without the change (the task's baseline).
    Finished there, the failure is the change's: graded 0 with `error`, tagged `tag`, not an ungraded infra error a
    policy could learn to reach for; any other end there, the failure stands as it was."""
    base = _baseline(task, open_box, state)
    grading.extra["without_change"] = {"end": base.end, "duration_s": base.took}
    if base.end == "finished":
        state.setdefault("tags", []).append(tag)
        grading.verdict = Verdict(reward=0.0, graded_by=graded_by, log=grading.log)
        grading.error = error


def _blame_untrusted_reward(
    task: TaskSpec, open_box: Callable[[int], Sandbox], grading: Grading, state: dict[str, Any]
) -> None:
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
    base = _baseline(task, open_box, state)
    grading.extra["without_change"] = {
        "end": base.end, "duration_s": base.took, "outlived": base.outlived, "exit_code": base.exit_code,
    }  # fmt: skip
    if base.end != "finished":
        return
    if signalled and (base.exit_code or 0) <= 128:
        grading.verdict = verdict.model_copy(update={"reward": 0.0, "killed": True})
    elif verdict.outlived and base.outlived == 0:
        state.setdefault("tags", []).append("outlived_with_change")
        grading.verdict = verdict.model_copy(update={"reward": 0.0})
        grading.error = ("OutlivedWithChangeError", f"{verdict.outlived} process(es) of the test run outlived test.sh "
                         "with the agent's change, any of which could have rewritten its reward file; on the image as "
                         "built none did")  # fmt: skip


def _blame_unwitnessed_reward(
    task: TaskSpec,
    with_change: Callable[[int], Sandbox],
    without_change: Callable[[int], Sandbox],
    grading: Grading,
    state: dict[str, Any],
    close: Callable[[Sandbox], None] | None = None,
) -> None:
    """Resolved by a reward file, whose verifier decides by itself what a failure is: no canary rides along (it would
    fail an honest run too), so the verifier runs once more with the change and one, a test that must fail appended
    to the test modules its command names (verify/canary.py). The reward drops: the runner reports truthfully and the
    grade stands. It does not, and the canary is reported passing: the runner was made to pass what fails (pytest's
    test call made a no-op: tests/harness/cheats/runner_noop.sh); or it is not reported while it is reported failing
    on the image as built: the change hid it (the test process ended with status 0 before any test ran:
    tests/harness/cheats/exit0_at_import.sh). Either way graded 0, tagged `runner_subverted`. Reported failing
    without a lower reward (the task's test.sh ignores failures), not reported there either, or a control that
    did not finish: the grade stands."""
    verdict = grading.verdict
    if verdict is None or verdict.graded_by != "reward_file" or verdict.reward < 1.0 or not witnessable(task):
        return
    control = grade(task, with_change, close or (lambda b: _remove(b, state)), tries=1, witness=True)
    got = control.verdict
    grading.extra["witness"] = {"reward": got.reward if got else None, "canary": got.canary_seen if got else None}
    if got is None or got.reward < verdict.reward or got.canary_seen == canaries.FAILED:
        return
    seen = got.canary_seen
    if seen != canaries.PASSED:
        base = _baseline(task, without_change, state, witness=True)
        grading.extra["witness"]["without_change"] = base.canary
        if base.canary != canaries.FAILED:
            return
        seen = canaries.HIDDEN
    grading.verdict = verdict.model_copy(update={"reward": 0.0, "canary": got.canary, "canary_seen": seen})


def _blame_missing_canary(
    task: TaskSpec, open_box: Callable[[int], Sandbox], grading: Grading, state: dict[str, Any]
) -> None:
    """Resolved with the change while the log has no failing report of the verifier's canary: run it once without
    the change. There the canary reported failing, so the runner reports it unless the change stops that (PASSED
    lines written to the test process's real stdout, then an exit before pytest reports): graded as failing, the
    canary read as "hidden", tagged `runner_subverted`. Otherwise the runner does not report it anyway (its
    settings): the grade stands, tagged `canary_missing` (verify/canary.py)."""
    base = _baseline(task, open_box, state)
    grading.extra["without_change"] = {"end": base.end, "duration_s": base.took, "canary": base.canary}
    if grading.verdict is not None and base.canary == canaries.FAILED:
        grading.verdict = grading.verdict.model_copy(update={"reward": 0.0, "canary_seen": canaries.HIDDEN})

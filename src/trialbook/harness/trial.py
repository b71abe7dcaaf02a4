"""One trial: sandbox -> agent -> verifier -> a Trial record, under the error policy.

Infra failures are retried with exponential backoff (policy `retry`); an agent that stops
early (timeout, context overflow) is still graded; a verifier timeout is never graded.
The container is always removed, whatever happens.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from docker.errors import DockerException
from requests import RequestException

from trialbook import tokens
from trialbook.agents.base import Agent, AgentStopped
from trialbook.harness.daemon_wait import await_engine
from trialbook.harness.paths import TRIAL_PREFIX
from trialbook.harness.trial_state import ImageRef, TrialExtra, TrialState, trial_tags
from trialbook.outcomes import FINDINGS, POLICY, ErrorKind, Outcome, classify, error_kind, is_graded, rule_for
from trialbook.records import Trial
from trialbook.rewards import RewardPolicy
from trialbook.sandbox import DockerEngine, Sandbox
from trialbook.sandbox.backend import UNROUTABLE
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.sandbox.docker import LABEL_RUN, LABEL_TASK, LABEL_TRIAL, slug
from trialbook.tasks import TaskError, TaskSpec
from trialbook.verify import blame, footprint, hacks, sources
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
from trialbook.verify.patch import kept_patch, patch_record
from trialbook.verify.runner import Verdict

LOG_LIMIT = 200_000  # characters of a log kept in the ledger (the tail)
TRACEBACK_LIMIT = 20_000  # characters of an exception's traceback kept (the tail: where it was raised)
TRACEBACK_FILE = "traceback.txt"  # a ledger artifact and agent/traceback.txt in the trial folder
AGENT_GRACE_S = 1.0  # an agent's own timeout handling gets this long before the harness cuts its execs


class DeadlineExceeded(Exception):
    kind = ErrorKind.DEADLINE_EXCEEDED


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
    runtime: str = "auto"  # the containers' OCI runtime (DockerEngine.runtime_for)
    hack_policy: str = "zero"  # a hack_* tag on a rewarded trial: its training reward 0 (rewards.HACK_POLICIES)


@dataclass
class TrialResult:
    trial: Trial
    name: str
    agent_log: str = ""
    verifier_log: str = ""
    image: ImageRef | None = None
    extra_files: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def trial_name(run: str, task_id: str, attempt: int) -> str:
    """`tb-<run>-<task>-<attempt>-<8hex>`: the container name (and the trial folder name)."""
    return f"{TRIAL_PREFIX}{slug(run, 30)}-{slug(task_id, 60)}-{attempt}-{tokens.token_hex(4)}"


def _invalid(task: TaskError, attempt: int, name: str, agent: str) -> TrialResult:
    now = _now()
    trial = Trial(
        task_id=task.task_id,
        attempt=attempt,
        outcome=Outcome.INFRA_ERROR,
        exception=ErrorKind.INVALID_TASK,
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
    state = TrialState(started=_now(), t0=time.monotonic())
    for k in range(settings.retries + 1):
        state.new_try(k)  # nothing from a failed try leaks into the record
        try:
            stopper.check()
            state.verdict, state.error, state.error_message = _attempt(
                engine, task, attempt, name, settings, stopper, state
            )
            break
        except DeadlineExceeded as exc:
            state.error, state.error_message = ErrorKind.DEADLINE_EXCEEDED, str(exc)
            break
        except Interrupted:
            raise
        except Exception as exc:  # the policy table says which errors are retried; a harness bug costs one trial
            state.traceback = traceback.format_exc()[-TRACEBACK_LIMIT:]  # `trialbook log ID` prints it
            if isinstance(exc, RequestException | DockerException):  # the daemon's connection itself, unwrapped
                state.error, state.error_message = ErrorKind.DAEMON, f"Docker daemon unreachable: {exc}"
            else:
                state.error = error_kind(exc)
                state.error_message = str(exc) if state.error in POLICY else f"unexpected: {exc}"
            if not rule_for(state.error).retry or k == settings.retries or stopper.event.is_set():
                break
            if not await_engine(engine, state.error, stopper.event):
                break  # the engine stayed away: the trial ends infra_error
            stopper.event.wait(settings.backoff_s * 2**k)
            name = trial_name(settings.run, task.task_id, attempt)
    return _result(task, attempt, name, settings, state)


def _result(task: TaskSpec, attempt: int, name: str, settings: TrialSettings, state: TrialState) -> TrialResult:
    """The trial's record, logs and files, from what its last try gathered."""
    verdict, exc_type, exc_msg = state.verdict, state.error, state.error_message
    outcome, reward = _classify(exc_type, verdict)
    tags = trial_tags(verdict, outcome == Outcome.RESOLVED, state.tags)
    if exc_type is None:
        exc_type = next((finding for finding in FINDINGS if finding in tags), None)
        exc_msg = FINDINGS.get(exc_type or "")
    agent_result = state.agent_result
    extra = TrialExtra(
        trial_name=name,
        agent=settings.agent.name,
        timeout_multiplier=settings.timeout_multiplier,
        agent_timeout_s=task.agent_timeout * settings.timeout_multiplier,
        verifier_timeout_s=task.verifier_timeout,
        retries=state.retries,
        phase_s=state.phase_s,
        verifier_hash=task.verifier_hash,
        tags=tags,
        cleanup_error=state.cleanup_error,
        verifier=state.verifier,
        agent_limit_hits=state.agent_limit_hits,
        runtime=state.runtime,
        image=state.image,
        agent_result=agent_result,
        verdict=verdict,
    )
    if zeroed := RewardPolicy(hack_policy=settings.hack_policy).zeroed(reward, tags):
        extra.hack_zeroed = zeroed  # its training reward is 0; the grade and the outcome stand
    trial = Trial(
        task_id=task.task_id,
        attempt=attempt,
        repo=task.repo,
        outcome=outcome,
        reward=reward,
        exception=exc_type,
        exception_message=(exc_msg or "")[:2000] or None,
        duration_s=round(time.monotonic() - state.t0, 3),
        turns=agent_result.turns if agent_result else None,
        tokens=agent_result.tokens if agent_result else None,
        tests=verdict.tests if verdict else None,
        started_at=state.started,
        finished_at=_now(),
        extra=extra.as_dict(),
    )
    patch = kept_patch(state.patch) if state.patch else {}  # agent/patch.diff and the `patch.diff` artifact
    return TrialResult(
        trial,
        name,
        agent_log=agent_result.log[-LOG_LIMIT:] if agent_result else "",
        verifier_log=state.verifier_log[-LOG_LIMIT:],
        image=state.image,
        extra_files={
            **(agent_result.files if agent_result else {}),
            **patch,
            **({TRACEBACK_FILE: state.traceback} if state.traceback else {}),
        },  # fmt: skip
    )


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
    state: TrialState,
) -> tuple[Verdict | None, str | None, str | None]:
    """One try in a fresh container. Returns (verdict, exception type, message); raises SandboxError."""
    phases = state.phase_s
    t = time.monotonic()
    state.image = image = ImageRef(*engine.ensure_image(
        task.task_id, task.image, task.dockerfile.parent, task.environment_hash, settings.run, task.allow_network,
        settings.labels,
    ))  # fmt: skip
    labels = {**settings.labels, LABEL_RUN: settings.run, LABEL_TRIAL: name, LABEL_TASK: task.task_id}
    network = UNROUTABLE if task.unroutable_network else task.allow_network

    def start(box_name: str, prepare: tuple[str, Callable[[Sandbox], Any]] | None = None, **more: Any) -> Sandbox:
        started = engine.start(
            image.reference, box_name, labels, task.cpus, task.memory_mb, task.pids_limit, network, stopper.event,
            env=task.env, workdir=task.workdir, shell_setup=task.shell_setup, prepare=prepare, runtime=settings.runtime,
            **more,
        )  # fmt: skip
        started.watch_disk(task.disk_mb << 20)
        return started

    # an agent that brings its own files into its sandbox (an installed CLI, its model's socket: cli_agents.py)
    mounts = getattr(settings.agent, "sandbox_mounts", None)
    box = start(name, mounts=tuple(mounts(name))) if callable(mounts) else start(name)
    box.attempt = attempt
    state.runtime = box.runtime
    if task.isolation == "diff":  # the verifier's containers warm (and prepare) while the agent works
        with contextlib.suppress(IsolationError):  # no workdir: nothing warms; the verifier's start raises it
            prep = _verifier_prep(engine, task, image)
            engine.ahead(
                image.reference, labels, task.cpus, task.memory_mb, task.pids_limit, network, env=task.env,
                workdir=task.workdir, shell_setup=task.shell_setup, prepare=prep, runtime=settings.runtime,
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
            state.agent_result = settings.agent.run(box, task, budget)
        except AgentStopped as stop:
            stopper.check()  # a deadline or interrupt, not the agent's own limit
            state.agent_result = stop.result
            exc_type, exc_msg = error_kind(stop), str(stop)
        finally:
            box.until = None
        phases["agent_execution"] = round(time.monotonic() - t, 3)
        if exc_type is None and phases["agent_execution"] > budget + AGENT_GRACE_S:
            exc_type, exc_msg = ErrorKind.AGENT_TIMEOUT, f"agent returned after its {budget:g} s budget"
        if box.look_at_disk():  # the agent's own doing: stopped, still graded (outcomes.POLICY)
            exc_type = ErrorKind.DISK_QUOTA
            exc_msg = f"the agent's sandbox wrote {box.disk_hit:,} bytes, past its disk_mb = {task.disk_mb}"
        stopper.check()
        if hits := box.limit_hits():  # the agent's own limit hits are its business: it is still graded
            state.agent_limit_hits = hits
        t = time.monotonic()
        try:
            if task.isolation == "container":
                # the change's patch, read before the tests run in that container (signatures only: verify/isolation)
                # no working tree known (no workdir, no WORKDIR): no patch to keep, the grade does not need one
                workdir = (task.workdir or engine.image_workdir(image.reference) or "").rstrip("/")
                patch = in_place_patch(box, workdir, task.verifier_timeout) if workdir else None
                # a reward-file task's witnesses run in fresh containers, the agent's tree carried in (verify/witness)
                change = _witness_change(box, workdir) if witnesses.alongside(task) else None
                witnessed = _witnessing(start, name, change, task, stopper, state) if change is not None else None
                grading = _grade_container(box, task, stopper, lambda _k: start(f"{name}-b"), state, witnessed)
                keep_patch(patch, grading, state)
            else:
                workdir = workdir_of(engine, task, image.reference)
                try:
                    change = capture(box, workdir)
                except TreeTooLargeError as exc:
                    blame.remove_box(box, state)
                    grading = blame.big_tree(exc, lambda: start(f"{name}-i"), workdir, state)
                else:
                    blame.remove_box(box, state)
                    grading = _grade_diff(start, name, change, task, stopper, state)
        finally:
            phases["verifier"] = round(time.monotonic() - t, 3)
        state.verifier_log = grading.log
        state.verifier = {"isolation": task.isolation, "tries": grading.tries, **grading.extra}
        if grading.extra.get("verifier_disk_hit"):
            state.tags.append("disk_quota_in_tests")  # graded 0 (verify/isolation.grade)
        if grading.error is not None:
            if grading.error[0] == ErrorKind.VERIFIER_TIMEOUT:
                stopper.check()  # a deadline or interrupt cut the verifier: not its own timeout
            return grading.verdict, *grading.error  # a verdict only for a hang the change caused (blame.hang)
        return grading.verdict, exc_type, exc_msg
    finally:
        blame.remove_box(box, state)
        if change is not None:
            change.tree.close()


def _verifier_prep(engine: DockerEngine, task: TaskSpec, image: ImageRef) -> tuple[str, Callable[[Sandbox], Any]]:
    """What a warm verifier container computes while it waits: the image's side of the agent's diff."""
    workdir = workdir_of(engine, task, image.reference)
    return "verifier", base_preparer(workdir, task.verifier_timeout, image.id)


def keep_patch(patch: str | None, grading: Grading, state: TrialState) -> None:
    """The agent's patch kept whole with the trial (verify/patch.py), and its reward-hacking signatures
    (verify/hacks.py)."""
    state.patch = patch
    if patch:
        grading.extra["patch"] = patch_record(patch)
        state.tags.extend(hacks.signatures(patch))


def _witness_change(box: Sandbox, workdir: str) -> Change | None:
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
    box: Sandbox,
    task: TaskSpec,
    stopper: Stopper,
    fresh: Callable[[int], Sandbox],
    state: TrialState,
    witnessed: witnesses.Witnessed | None = None,
) -> Grading:
    """`isolation = "container"`: graded in the agent's own container, restored before each run; what a reward file
    says is checked against the verifier in a `fresh` container from the image (without the agent's work), as a
    diff's grade is. A task graded by its reward file has each graded try `witnessed` beside it in a fresh container
    of its own, never in the one the graded run touched (state it left there told the witness apart)."""

    def reopen(_k: int) -> Sandbox:
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
    start: Callable[..., Sandbox], name: str, change: Change, task: TaskSpec, stopper: Stopper, state: TrialState
) -> witnesses.Witnessed:
    """Witnesses for each graded try: fresh containers of the image, `change` carried in (not kept in it)."""
    prepare = ("verifier", base_preparer(change.workdir, task.verifier_timeout, state.image_id))
    return witnesses.Witnessed(
        task, stopper.event, name,
        lambda w, k: _opener(w.begin(start), f"{name}-w{k}-", change, task, stopper, state, prepare, [], False),
        lambda b: blame.remove_box(b, state),
    )  # fmt: skip


def _grade_diff(
    start: Callable[..., Sandbox], name: str, change: Change, task: TaskSpec, stopper: Stopper, state: TrialState
) -> Grading:
    """Grade the agent's diff in fresh containers; a test-infrastructure change is also graded without it. A task
    graded by its reward file has a witness run (verify/blame.unwitnessed_reward) started beside each graded try,
    in a container of its own (verify/witness.py): joined, its container removed, before this returns or raises."""

    image_id = state.image_id
    prepare = ("verifier", base_preparer(change.workdir, task.verifier_timeout, image_id))  # as _verifier_prep

    def opener(
        suffix: str, exclude: list[str] | None, begin: Callable[..., Sandbox] = start, keep: bool = True
    ) -> Callable[[int], Sandbox]:
        return _opener(begin, f"{name}-{suffix}", change, task, stopper, state, prepare, exclude, keep, start)

    state.workdir = change.workdir  # the baseline's footprint is read outside it (verify/footprint.py)
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
    opener: Callable[..., Callable[[int], Sandbox]],
    change: Change,
    task: TaskSpec,
    state: TrialState,
    witness: Callable[[], Grading] | None,
) -> Grading:
    """What follows the graded run of a diff: the blame rules (verify/blame.py) and the test-infrastructure control."""
    keep_patch(change.patch, grading, state)
    if change.too_long:
        grading.extra["paths_too_long"] = change.too_long
    if grading.error is not None and grading.error[0] == ErrorKind.VERIFIER_TIMEOUT and change.files:
        blame.hang(task, opener("b", None), grading, state)
    if grading.error is not None and grading.extra.get("limits_hit_in_tests") and change.files:
        blame.limits(task, opener("b", None), grading, state)
    if change.files:
        blame.reward_file(task, opener("b", None), grading, state, witness=witness)
    verdict = grading.verdict
    if verdict is not None and verdict.reward >= 1.0 and verdict.canary_seen in canaries.UNSEEN and change.files:
        blame.missing_canary(task, opener("b", None), grading, state)
    if not change.test_infra:
        return grading
    state.tags.append("test_infra_changed")
    grading.extra["test_infra_files"] = [printable(p) for p in change.test_infra]
    if grading.verdict is not None and grading.verdict.reward >= 1.0:
        control = grade(task, opener("c", change.test_infra), lambda b: blame.remove_box(b, state))
        reward = control.verdict.reward if control.verdict else None
        grading.extra["control"] = {"reward": reward, "error": control.error[0] if control.error else None}
        if reward is None or reward < 1.0:  # resolved only with the agent's own test infrastructure
            grading.verdict = grading.verdict.model_copy(update={"reward": reward or 0.0, "tests": None})
            grading.extra["control"]["log_tail"] = control.log[-2000:]
    return grading


def _opener(
    begin: Callable[..., Sandbox],
    prefix: str,
    change: Change,
    task: TaskSpec,
    stopper: Stopper,
    state: TrialState,
    prepare: tuple[str, Callable[[Sandbox], Any]],
    exclude: list[str] | None,
    keep: bool = True,
    start: Callable[..., Sandbox] | None = None,
) -> Callable[[int], Sandbox]:
    """Fresh verifier boxes (started by `begin`, named `prefix` + try) with the change applied minus `exclude` (None:
    the image as built); `keep`: what the carry learns of the change kept in it (apply_change); `start`: how the
    image's own tree is measured when the carry outgrew its time (blame.slow_carry)."""
    image_id = state.image_id

    def open_box(k: int) -> Sandbox:
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

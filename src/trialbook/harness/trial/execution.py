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
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from docker.errors import DockerException
from requests import RequestException

from trialbook import tokens
from trialbook.agents.base import Agent, AgentStopped
from trialbook.extra_schema import with_extra
from trialbook.harness.run.paths import TRIAL_PREFIX
from trialbook.harness.trial.daemon_wait import await_engine
from trialbook.harness.trial.state import ImageRef, TrialExtra, TrialState
from trialbook.outcomes import FINDINGS, POLICY, ErrorKind, Outcome, classify, error_kind, is_graded, rule_for
from trialbook.records import Trial
from trialbook.rewards import RewardPolicy
from trialbook.sandbox import Backend, Box, BoxSpec
from trialbook.sandbox.backend import UNROUTABLE, Mount, Prepare
from trialbook.sandbox.docker import LABEL_RUN, LABEL_TASK, LABEL_TRIAL, slug
from trialbook.tasks import TaskError, TaskSpec
from trialbook.verify.front import TrialVerifier
from trialbook.verify.isolation import IsolationError
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
    runtime: str = "auto"  # the containers' OCI runtime (Backend.runtime_for)
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
        # validate counts it as that agent's trial that could not run
        extra=with_extra(None, trial_name=name, agent=agent),
    )
    return TrialResult(trial, name)


def run_trial(
    engine: Backend, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
) -> TrialResult:
    name = trial_name(settings.run, task.task_id, attempt)
    if isinstance(task, TaskError):
        return _invalid(task, attempt, name, settings.agent.name)
    state = TrialState(started=_now(), t0=time.monotonic())
    verifier = TrialVerifier(engine, task, stopper, state)
    for k in range(settings.retries + 1):
        state.new_try(k)  # nothing from a failed try leaks into the record
        try:
            stopper.check()
            state.verdict, state.error, state.error_message = _attempt(engine, verifier, attempt, name, settings, state)
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
    return _result(verifier, attempt, name, settings, state)


def _result(
    verifier: TrialVerifier, attempt: int, name: str, settings: TrialSettings, state: TrialState
) -> TrialResult:
    """The trial's record, logs and files, from what its last try gathered."""
    task = verifier.task
    verdict, exc_type, exc_msg = state.verdict, state.error, state.error_message
    outcome, reward = _classify(exc_type, verdict)
    agent_result = state.agent_result
    agent_files = agent_result.files if agent_result else {}
    tags = verifier.tags(verdict, outcome == Outcome.RESOLVED, state.tags, agent_files)
    if exc_type is None:
        exc_type = next((finding for finding in FINDINGS if finding in tags), None)
        exc_msg = FINDINGS.get(exc_type or "")
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
        verdict_keys=verifier.record(verdict) if verdict else None,
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
    patch = verifier.kept_files(state.patch)  # agent/patch.diff and the `patch.diff` artifact
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


def box_spec(task: TaskSpec, image: str, labels: dict[str, str], runtime: str = "auto") -> BoxSpec:
    """The sandbox a trial of `task` starts in (its agent's and its verifier's): the task's limits, network and
    environment on `image`."""
    return BoxSpec(
        image, labels, task.cpus, task.memory_mb, task.pids_limit,
        UNROUTABLE if task.unroutable_network else task.allow_network, task.env, task.workdir, task.shell_setup,
        runtime=runtime,
    )  # fmt: skip


def _classify(exc_type: str | None, verdict: Verdict | None) -> tuple[Outcome, float | None]:
    outcome = classify(exc_type, verdict.reward if verdict else None)
    return outcome, (verdict.reward if verdict and is_graded(outcome) else None)


def _attempt(
    engine: Backend,
    verifier: TrialVerifier,
    attempt: int,
    name: str,
    settings: TrialSettings,
    state: TrialState,
) -> tuple[Verdict | None, str | None, str | None]:
    """One try in a fresh container. Returns (verdict, exception type, message); raises SandboxError."""
    task, stopper = verifier.task, verifier.stopper
    phases = state.phase_s
    t = time.monotonic()
    state.image = image = ImageRef(*engine.ensure_image(
        task.task_id, task.image, task.dockerfile.parent, task.environment_hash, settings.run, task.allow_network,
        settings.labels,
    ))  # fmt: skip
    labels = {**settings.labels, LABEL_RUN: settings.run, LABEL_TRIAL: name, LABEL_TASK: task.task_id}
    spec = box_spec(task, image.reference, labels, settings.runtime)

    def start(box_name: str, prepare: Prepare | None = None, mounts: tuple[Mount, ...] = ()) -> Box:
        started = engine.start(replace(spec, prepare=prepare, mounts=mounts), box_name, stopper.event)
        started.watch_disk(task.disk_mb << 20)
        return started

    # an agent that brings its own files into its sandbox (an installed CLI, its model's socket: cli_agents.py)
    mounts = getattr(settings.agent, "sandbox_mounts", None)
    box = start(name, mounts=tuple(mounts(name))) if callable(mounts) else start(name)
    box.attempt = attempt
    state.runtime = box.runtime
    if task.isolation == "diff":  # the verifier's containers warm (and prepare) while the agent works
        with contextlib.suppress(IsolationError):  # no workdir: nothing warms; the verifier's start raises it
            engine.ahead(replace(spec, prepare=verifier.prepare(image.reference, image.id)))
    phases["environment_setup"] = round(time.monotonic() - t, 3)
    exc_type: str | None = None
    exc_msg: str | None = None
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
            grading = verifier.grade(box, image.reference, start, name)
        finally:
            phases["verifier"] = round(time.monotonic() - t, 3)
        state.verifier_log = grading.log
        state.verifier = {"isolation": task.isolation, "tries": grading.tries, **grading.notes.as_dict()}
        if grading.error is not None:
            if grading.error.kind == ErrorKind.VERIFIER_TIMEOUT:
                stopper.check()  # a deadline or interrupt cut the verifier: not its own timeout
            # a verdict only for a hang the change caused (blame.hang)
            return grading.verdict, grading.error.kind, grading.error.message
        return grading.verdict, exc_type, exc_msg
    finally:
        verifier.release(box)

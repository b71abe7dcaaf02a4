"""Running a set of trials: thread pool, deadline, progress bar, one ledger transaction per trial.

`start_run` creates the run first (config + stack) and then records each trial as it finishes,
so a crash or kill -9 loses at most the trials in flight; `resume_run` runs exactly the planned
(task, attempt) pairs with no record, and `rerun` replaces chosen trials with new ones that
supersede them.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

import trialbook
from trialbook.agents import get_agent
from trialbook.agents.base import agent_stack, with_agent_stack
from trialbook.errors import TrialbookError, UserError
from trialbook.harness.results import record_trial, write_trial_dir
from trialbook.harness.trial import Interrupted, Stopper, TrialResult, TrialSettings, run_trial
from trialbook.ledger.store import Ledger
from trialbook.records import Outcome, Run, is_resolved
from trialbook.sandbox import DaemonError, DockerEngine, docker_help
from trialbook.tasks import TaskError, TaskSpec, load_tasks


class RunConfig(BaseModel):
    """What `run` was asked to do; stored on the run so `resume` and `rerun` can do it again."""

    tasks_dir: str
    agent: str
    attempts: int = Field(1, ge=1)
    concurrency: int = Field(1, ge=1)
    timeout_multiplier: float = Field(1.0, gt=0)
    deadline_minutes: float | None = Field(None, gt=0)
    retries: int = Field(2, ge=0)
    backoff_s: float = Field(2.0, ge=0)
    tasks: list[str] | None = None
    runs_dir: str = "runs"
    agent_options: dict[str, Any] = Field(default_factory=dict)  # e.g. the mini agent's endpoints


@dataclass
class Plan:
    task: TaskSpec | TaskError
    attempt: int
    supersedes: int | None = None
    supersedes_name: str | None = None  # its folder moves to runs/<run>.superseded/


@dataclass
class Tally:
    total: int
    done: int = 0
    resolved: int = 0
    errors: int = 0
    interrupted: bool = False
    deadline_hit: bool = False


def connect() -> DockerEngine:
    try:
        return DockerEngine()
    except DaemonError:
        raise UserError(docker_help()) from None


def sandbox_stack(engine: DockerEngine, agent: str, specs: list[TaskSpec], images: dict[str, str]) -> dict[str, Any]:
    hashes = {s.task_id: s.verifier_hash[:16] for s in specs}
    combined = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()
    images = {task: image_id[:19] for task, image_id in images.items()}  # sha256: + 12 hex, as `docker images`
    distinct = set(images.values())
    return {
        "harness": "trialbook",
        "harness_version": trialbook.__version__,
        "engine": "docker",
        "engine_version": engine.version(),
        "agent": agent,
        "image": next(iter(distinct)) if len(distinct) == 1 else None,
        "images": dict(sorted(images.items())),
        "verifier_hash": combined[:16],
        "verifier_hashes": dict(sorted(hashes.items())),
    }


def _load(config: RunConfig) -> tuple[list[TaskSpec], list[TaskError]]:
    return load_tasks(Path(config.tasks_dir), config.tasks)


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("resolved {task.fields[resolved]} · errors {task.fields[errors]}"),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=False,
    )


def execute(
    ledger: Ledger,
    engine: DockerEngine,
    run_id: int,
    run_name: str,
    config: RunConfig,
    plans: list[Plan],
    timeout_multiplier: float | None = None,
    on_result: Callable[[TrialResult], None] | None = None,
) -> Tally:
    """Run `plans` with `config.concurrency` threads; each finished trial is recorded at once."""
    settings = TrialSettings(
        run=run_name,
        agent=get_agent(config.agent, config.agent_options),
        timeout_multiplier=timeout_multiplier or config.timeout_multiplier,
        retries=config.retries,
        backoff_s=config.backoff_s,
    )
    out_dir = Path(config.runs_dir) / run_name
    with run_lock(config, run_name):
        return _execute(ledger, engine, run_id, run_name, config, plans, settings, out_dir, on_result)


_held: set[Path] = set()  # locks this process holds (re-entered by execute() inside resume/rerun)


@contextmanager
def run_lock(config: RunConfig, run_name: str) -> Iterator[None]:
    """One process at a time per run (kill -9 releases it): a resume must not race a live run."""
    out_dir = Path(config.runs_dir) / run_name
    out_dir.mkdir(parents=True, exist_ok=True)
    path = (out_dir / ".lock").resolve()
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


def _execute(
    ledger: Ledger,
    engine: DockerEngine,
    run_id: int,
    run_name: str,
    config: RunConfig,
    plans: list[Plan],
    settings: TrialSettings,
    out_dir: Path,
    on_result: Callable[[TrialResult], None] | None,
) -> Tally:
    stopper = Stopper()
    timer = None
    if config.deadline_minutes is not None:
        timer = threading.Timer(config.deadline_minutes * 60, stopper.fire, args=("deadline",))
        timer.daemon = True
        timer.start()
    tally = Tally(total=len(plans))
    images: dict[str, str] = {}

    def one(plan: Plan) -> TrialResult | None:
        try:
            return run_trial(engine, plan.task, plan.attempt, settings, stopper)
        except Interrupted:
            return None

    with _progress() as bar, ThreadPoolExecutor(max_workers=config.concurrency) as pool:
        ptask = bar.add_task(run_name, total=len(plans), resolved=0, errors=0)
        pending: dict[Future[TrialResult | None], Plan] = {pool.submit(one, p): p for p in plans}
        try:
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in finished:
                    plan = pending.pop(fut)
                    result = fut.result()
                    if result is None:
                        continue
                    record_trial(ledger, run_id, result, plan.supersedes)
                    write_trial_dir(out_dir, run_name, result)
                    if plan.supersedes_name:
                        _retire(out_dir, plan.supersedes_name)
                    if result.image:
                        images[result.trial.task_id] = result.image[1]
                    t = result.trial
                    tally.done += 1
                    tally.resolved += is_resolved(t.outcome, t.reward)
                    tally.errors += t.outcome in (Outcome.INFRA_ERROR, Outcome.VERIFIER_TIMEOUT)
                    tally.deadline_hit |= t.outcome == Outcome.INCOMPLETE
                    bar.update(ptask, advance=1, resolved=tally.resolved, errors=tally.errors)
                    if on_result:
                        on_result(result)
        except KeyboardInterrupt:
            tally.interrupted = True
            stopper.fire("interrupt")
            pool.shutdown(wait=True, cancel_futures=True)
            engine.clean(run_name, images=False)
            raise
        finally:
            if timer is not None:
                timer.cancel()
    _update_stack(ledger, engine, run_id, run_name, config, images)
    return tally


def _retire(out_dir: Path, trial_name: str) -> None:
    """Move a superseded trial's folder aside so runs/<run>/ stays the run's current view."""
    folder = out_dir / trial_name
    if folder.is_dir():
        dest = out_dir.parent / f"{out_dir.name}.superseded"
        dest.mkdir(exist_ok=True)
        shutil.rmtree(dest / trial_name, ignore_errors=True)
        folder.rename(dest / trial_name)


def _update_stack(
    ledger: Ledger, engine: DockerEngine, run_id: int, run_name: str, config: RunConfig, images: dict[str, str]
) -> None:
    old = ledger.run(run_name)["stack"]
    merged = {**(old.get("images") or {}), **images}
    specs, _ = _load(config)
    with ledger.transaction() as conn:
        stack = with_agent_stack(sandbox_stack(engine, config.agent, specs, merged), old.get("serving"))
        ledger.set_run_stack(conn, run_id, stack)


def start_run(ledger: Ledger, name: str, config: RunConfig, replace: bool = False) -> tuple[Tally, list[TaskError]]:
    agent = get_agent(config.agent, config.agent_options)
    specs, errors = _load(config)
    engine = connect()
    tasks: list[TaskSpec | TaskError] = sorted([*specs, *errors], key=lambda t: t.task_id)
    frozen = {  # absolute paths, and the plan itself: a task folder added later is not part of this run
        "tasks_dir": str(Path(config.tasks_dir).resolve()),
        "runs_dir": str(Path(config.runs_dir).resolve()),
        "tasks": [t.task_id for t in tasks],
    }
    config = config.model_copy(update=frozen)
    run = Run(
        name=name,
        kind="eval",
        config=config.model_dump(),
        stack=with_agent_stack(sandbox_stack(engine, config.agent, specs, {}), agent_stack(agent)),
        source=config.tasks_dir,
    )
    plans = [Plan(t, a) for a in range(config.attempts) for t in tasks]
    with run_lock(config, name):  # before --replace can delete a run another process is executing
        run_id = open_run(ledger, run, config, specs, replace)
        return execute(ledger, engine, run_id, name, config, plans), errors


def open_run(ledger: Ledger, run: Run, config: RunConfig, specs: list[TaskSpec], replace: bool) -> int:
    """Record a new run and its tasks; with `replace`, the replaced run's trial folders go too.

    With `replace`, call it holding `run_lock(config, run.name)`: a live run must not lose its folders."""
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, run, replace=replace)
        ledger.upsert_tasks(conn, [s.record() for s in specs])
    if replace:  # the replaced run's trial folders would otherwise be read back with the new ones
        for old in (Path(config.runs_dir) / run.name).glob("tb-*"):
            shutil.rmtree(old, ignore_errors=True)
    return run_id


def _stored(ledger: Ledger, name: str) -> tuple[dict[str, Any], RunConfig]:
    run = ledger.run(name)
    try:
        return run, RunConfig.model_validate(run["config"])
    except ValueError:
        raise UserError(f"run '{name}' was not made by `trialbook run` (imported runs cannot be resumed)") from None


def resume_run(ledger: Ledger, name: str) -> tuple[Tally, int]:
    """Remove the run's leftover containers, then run every planned trial that has no record.

    Returns (tally, leftover containers removed)."""
    run, config = _stored(ledger, name)
    engine = connect()
    specs, errors = _load(config)
    tasks: list[TaskSpec | TaskError] = sorted([*specs, *errors], key=lambda t: t.task_id)
    with run_lock(config, name):  # the containers of a live run are not leftovers
        removed, _ = engine.clean(name, images=False)
        recorded = {(t["task_id"], t["attempt"]) for t in ledger.trials(run["id"], current_only=False)}
        plans = [Plan(t, a) for a in range(config.attempts) for t in tasks if (t.task_id, a) not in recorded]
        return execute(ledger, engine, run["id"], name, config, plans), removed


def rerun(ledger: Ledger, name: str, where: str, timeout_multiplier: float | None = None) -> Tally:
    """Run again the current trials whose outcome is `where`; each new trial supersedes its old one."""
    try:
        outcome = Outcome(where)
    except ValueError:
        raise UserError(f"--where must be one of: {', '.join(o.value for o in Outcome)}") from None
    run, config = _stored(ledger, name)
    engine = connect()
    specs, errors = _load(config)
    by_id: dict[str, TaskSpec | TaskError] = {t.task_id: t for t in [*specs, *errors]}
    with run_lock(config, name):
        engine.clean(name, images=False)
        targets = [t for t in ledger.trials(run["id"]) if t["outcome"] == outcome.value]
        missing = sorted({t["task_id"] for t in targets} - set(by_id))
        if missing:
            raise TrialbookError(f"task folder(s) no longer in {config.tasks_dir}: {', '.join(missing)}")
        plans = [
            Plan(by_id[t["task_id"]], t["attempt"], t["id"], (t["extra"] or {}).get("trial_name")) for t in targets
        ]
        tally = execute(ledger, engine, run["id"], name, config, plans, timeout_multiplier)
    note = {
        "where": outcome.value,
        "timeout_multiplier": timeout_multiplier or config.timeout_multiplier,
        "trials": len(plans),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    stored = ledger.run(name)["config"]
    stored["reruns"] = [*stored.get("reruns", []), note]
    with ledger.transaction() as conn:
        ledger.set_run_config(conn, run["id"], stored)
    return tally


def clean(run: str | None = None) -> tuple[int, int]:
    return connect().clean(run)

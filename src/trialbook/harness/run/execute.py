"""Executing planned trials: an executor (harness/placement/executors.py), the run's deadline, a progress bar, and each
trial recorded as it ends (this process is the only ledger writer, whatever the executor)."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable

from trialbook.agents import get_agent
from trialbook.agents.base import Agent
from trialbook.harness.placement.executors import Executor, LocalExecutor
from trialbook.harness.run.bootstrap import trial_settings
from trialbook.harness.run.config import PlannedTrial, RunConfig, Tally
from trialbook.harness.run.paths import RunPaths
from trialbook.harness.run.progress import Breaker, CircuitOpen, progress, sigterm_as_interrupt, stopped_line, warn
from trialbook.harness.run.stack import update_stack
from trialbook.harness.trial.execution import Stopper, TrialResult, TrialSettings
from trialbook.harness.trial.writer import recorded, write_or_warn
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome, is_resolved
from trialbook.sandbox.docker import LABEL_LEDGER
from trialbook.tasks import TaskSpec
from trialbook.verify import witness as witnesses


def execute(
    ledger: Ledger,
    executor: Executor,
    run_id: int,
    run_name: str,
    config: RunConfig,
    plans: list[PlannedTrial],
    on_result: Callable[[TrialResult], None] | None = None,
    agent: Agent | None = None,
) -> Tally:
    """Run `plans`, `config.concurrency` at once, where `executor` says; each finished trial is recorded at once
    (its agent's timeout x config.timeout_multiplier: `rerun --timeout-multiplier` passes a config with its own).

    Call it holding the run lock, with `agent` and the runtime checked by harness/run/bootstrap.py's `prepare`
    (`agent=None` builds it from the config)."""
    agent = agent or get_agent(config.agent, config.agent_options)
    settings = trial_settings(ledger, run_id, run_name, config, agent)
    return _execute(ledger, executor, run_id, config, plans, settings, config.paths(run_name), on_result)


def _execute(
    ledger: Ledger,
    executor: Executor,
    run_id: int,
    config: RunConfig,
    plans: list[PlannedTrial],
    settings: TrialSettings,
    paths: RunPaths,
    on_result: Callable[[TrialResult], None] | None,
) -> Tally:
    run_name = paths.run
    stopper = Stopper()
    timer = None
    deadline_at = None
    if config.deadline_minutes is not None:
        deadline_at = time.time() + config.deadline_minutes * 60
        timer = threading.Timer(config.deadline_minutes * 60, stopper.fire, args=("deadline",))
        timer.daemon = True
        timer.start()
    tally = Tally(total=len(plans))
    images: dict[str, str] = {}
    # The warm pool (sandbox/warm.py) lives in this process's engine: local trials only; a Ray node's
    # trials start their own containers.
    engine = executor.engine if config.warm_pool and isinstance(executor, LocalExecutor) else None
    if engine is not None:
        engine.open_pool(config.concurrency).plan(_demand(plans))

    breaker = Breaker(config.stop_after_errors)
    with sigterm_as_interrupt(), progress(run_name, len(plans), config.progress_every_s) as shown:
        try:
            finished = recorded(ledger, run_id, executor, plans, settings, stopper, config.concurrency, deadline_at)
            for plan, result, trial_id in finished:  # each in the ledger first (in a group commit: results.py)
                warning = write_or_warn(ledger, trial_id, paths.folder, run_name, result)
                if plan.supersedes_name and warning is None:
                    _retire(paths, plan.supersedes_name)
                if warning is not None:
                    tally.folder_warnings += 1
                    if tally.folder_warnings == 1:
                        warn(shown, f"warning: {warning} (the trial is recorded in the ledger)")
                if result.image:
                    images[result.trial.task_id] = result.image.id
                t = result.trial
                tally.done += 1
                tally.resolved += is_resolved(t.outcome, t.reward)
                tally.errors += t.outcome in (Outcome.INFRA_ERROR, Outcome.VERIFIER_TIMEOUT)
                tally.infra += t.outcome == Outcome.INFRA_ERROR
                tally.deadline_hit |= t.outcome == Outcome.INCOMPLETE
                shown.update(tally.done, tally.resolved, tally.errors)
                if on_result:
                    on_result(result)
                if breaker.record(t) and tally.done < tally.total:
                    raise CircuitOpen(breaker.message(run_name, tally, t))
        except (KeyboardInterrupt, CircuitOpen) as exc:
            tally.interrupted = True
            stopper.fire("interrupt")
            if engine is not None:
                engine.close_pool()  # no warm-up in flight may outlive the clean below
            executor.clean(run_name, images=False, ledger=settings.labels[LABEL_LEDGER])
            if isinstance(exc, KeyboardInterrupt):
                warn(shown, stopped_line(run_name, tally, "interrupted"))
            raise
        finally:
            if timer is not None:
                timer.cancel()
            if engine is not None:
                engine.close_pool()  # waits for the last removals: no container outlives the run
    update_stack(ledger, executor, run_id, run_name, config, images)
    return tally


def _demand(plans: list[PlannedTrial]) -> dict[tuple[str, str], int]:
    """Containers the trials will ask for: each its agent's, plus a fresh verifier's (diff isolation), two for a task
    graded by its reward file (its witness run beside the graded one: verify/witness.py)."""
    demand: dict[tuple[str, str], int] = {}
    side: dict[str, bool] = {}  # per task: planting is read once, however many trials it has
    for plan in plans:
        if isinstance(plan.task, TaskSpec):
            task = plan.task
            if task.isolation == "diff" and task.task_id not in side:
                try:
                    side[task.task_id] = witnesses.alongside(task)
                except Exception:  # noqa: BLE001 - a hint to the warm pool: the trial meets whatever failed itself
                    side[task.task_id] = False
            roles = ("agent", "verifier") if task.isolation == "diff" else ("agent",)
            for role in roles:
                n = 2 if role == "verifier" and side[task.task_id] else 1
                demand[task.task_id, role] = demand.get((task.task_id, role), 0) + n
    return demand


def _retire(paths: RunPaths, trial_name: str) -> None:
    """Move a superseded trial's folder aside so runs/<run>/ stays the run's current view."""
    folder = paths.trial(trial_name).folder
    if folder.is_dir():
        with contextlib.suppress(OSError):  # a full runs folder: the old folder stays where it is
            paths.superseded.mkdir(exist_ok=True)
            shutil.rmtree(paths.superseded / trial_name, ignore_errors=True)
            folder.rename(paths.superseded / trial_name)

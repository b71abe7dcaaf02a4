"""Starting, resuming and re-running a run (the pool that executes its trials is harness/run/execute.py).

`start_run` creates the run first (config + stack, through harness/run/bootstrap.py) and then records each
trial as it finishes, so a crash or kill -9 loses at most the trials in flight; `resume_run` runs exactly the planned
(task, attempt) pairs with no record, and `rerun` replaces chosen trials with new ones that
supersede them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from trialbook.errors import TrialbookError, UserError
from trialbook.extra_schema import read_extra
from trialbook.harness.placement.executors import Executor, LocalExecutor
from trialbook.harness.run.bootstrap import RunStart, prepare
from trialbook.harness.run.config import PlannedTrial, RunConfig, Tally
from trialbook.harness.run.execute import execute
from trialbook.harness.run.lock import run_lock
from trialbook.harness.trial.writer import restore_folders
from trialbook.ledger.rows import RunRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome
from trialbook.records import Run
from trialbook.tasks import TaskError, TaskSpec


def start_run(
    ledger: Ledger, name: str, config: RunConfig, replace: bool = False, executor: Executor | None = None
) -> tuple[Tally, list[TaskError]]:
    start = prepare(config, executor)
    frozen = {  # absolute paths, and the plan itself: a task folder added later is not part of this run
        "tasks_dir": str(Path(config.tasks_dir).resolve()),
        "runs_dir": str(Path(config.runs_dir).resolve()),
        "tasks": [t.task_id for t in start.tasks],
    }
    start.config = config = config.model_copy(update=frozen)
    run = Run(name=name, kind="eval", config=config.model_dump(), stack=start.stack(), source=config.tasks_dir)
    plans = planned(config, start.tasks)
    with start.opened(ledger, run, replace) as run_id:  # the lock first: --replace must not delete a live run
        return _execute(ledger, start, run_id, name, plans), start.errors


def planned(config: RunConfig, tasks: list[TaskSpec | TaskError]) -> list[PlannedTrial]:
    """Every (task, attempt) of the run; for the patch agent (grade, reverify) only those it has a patch for."""
    plans = [PlannedTrial(t, a) for a in range(config.attempts) for t in tasks]
    patches = config.agent_options.get("patches") if config.agent == "patch" else None
    if isinstance(patches, dict):
        plans = [p for p in plans if str(p.attempt) in patches.get(p.task.task_id, {})]
    return plans


def _execute(
    ledger: Ledger,
    start: RunStart,
    run_id: int,
    name: str,
    plans: list[PlannedTrial],
    timeout_multiplier: float | None = None,
) -> Tally:
    """`execute` with the start's agent; the patch agent, which applies one stored patch per (task, attempt), is
    built once per attempt."""
    config, engine = start.config, start.executor
    if timeout_multiplier:  # this time only (rerun): the stored config keeps its own
        config = config.model_copy(update={"timeout_multiplier": timeout_multiplier})
    if config.agent != "patch" or config.attempts == 1:
        return execute(ledger, engine, run_id, name, config, plans, agent=start.agent)
    tally = Tally(total=len(plans))
    for attempt in sorted({p.attempt for p in plans}):
        options = {**config.agent_options, "attempt": attempt}
        part = execute(ledger, engine, run_id, name, config.model_copy(update={"agent_options": options}),
                       [p for p in plans if p.attempt == attempt])  # fmt: skip
        for key in ("done", "resolved", "errors", "folder_warnings"):
            setattr(tally, key, getattr(tally, key) + getattr(part, key))
        tally.deadline_hit |= part.deadline_hit
    return tally


def _stored(ledger: Ledger, name: str) -> tuple[RunRow, RunConfig]:
    run = ledger.get_run(name)
    try:
        return run, RunConfig.model_validate(run.config)
    except ValidationError as exc:
        if "agent" not in run.config or "tasks_dir" not in run.config:
            raise UserError(f"run '{name}' was not made by `trialbook run` (imported runs cannot be resumed)") from None
        first = exc.errors()[0]  # e.g. an inf timeout multiplier an older ledger holds: one line
        where = ".".join(map(str, first["loc"]))
        raise UserError(f"run '{name}': its stored config cannot be run again: {where}: {first['msg']}") from None


def resume_run(ledger: Ledger, name: str, executor: Executor | None = None) -> tuple[Tally, int]:
    """Remove the run's leftover containers (on every node of a cluster), then run every planned trial that
    has no record. Returns (tally, leftover containers removed)."""
    run, config = _stored(ledger, name)
    start = prepare(config, executor, grader=False)
    with run_lock(config, name, ledger):  # the containers of a live run are not leftovers
        removed, _ = start.executor.clean(name, images=False, ledger=ledger.id)
        recorded = {(t.task_id, t.attempt) for t in ledger.trial_rows(run.id, current_only=False)}
        plans = [p for p in planned(config, start.tasks) if (p.task.task_id, p.attempt) not in recorded]
        tally = _execute(ledger, start, run.id, name, plans)
        folder = config.paths(name).folder
        try:
            tally.folders_restored = restore_folders(ledger, run.id, folder, name)
        except OSError as exc:
            raise TrialbookError(
                f"trial folders still cannot be written under {folder}: {exc.strerror or exc}"
            ) from None
        return tally, removed


def rerun(
    ledger: Ledger, name: str, where: str, timeout_multiplier: float | None = None, executor: Executor | None = None
) -> Tally:
    """Run again the current trials whose outcome is `where`; each new trial supersedes its old one."""
    try:
        outcome = Outcome(where)
    except ValueError:
        raise UserError(f"--where must be one of: {', '.join(o.value for o in Outcome)}") from None
    run, config = _stored(ledger, name)
    start = prepare(config, executor, grader=False)
    by_id: dict[str, TaskSpec | TaskError] = {t.task_id: t for t in start.tasks}
    with run_lock(config, name, ledger):
        start.executor.clean(name, images=False, ledger=ledger.id)
        targets = [t for t in ledger.trial_rows(run.id) if t.outcome == outcome.value]
        missing = sorted({t.task_id for t in targets} - set(by_id))
        if missing:
            raise TrialbookError(f"task folder(s) no longer in {config.tasks_dir}: {', '.join(missing)}")
        plans = [PlannedTrial(by_id[t.task_id], t.attempt, t.id, read_extra(t).trial_name) for t in targets]
        tally = _execute(ledger, start, run.id, name, plans, timeout_multiplier)
    note = {
        "where": outcome.value,
        "timeout_multiplier": timeout_multiplier or config.timeout_multiplier,
        "trials": len(plans),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    stored = ledger.get_run(name).config
    stored["reruns"] = [*stored.get("reruns", []), note]
    with ledger.transaction() as conn:
        ledger.set_run_config(conn, run.id, stored)
    return tally


def clean(
    run: str | None = None, ledger: Ledger | str | None = None, executor: Executor | None = None
) -> tuple[int, int]:
    """Remove the containers (and built images) of `run` or of every run; with `ledger` (a ledger or its id),
    only that ledger's."""
    ledger_id = ledger.id if isinstance(ledger, Ledger) else ledger
    return (executor or LocalExecutor()).clean(run, ledger=ledger_id)

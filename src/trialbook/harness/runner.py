"""Starting, resuming and re-running a run (the pool that executes its trials is harness/pool.py).

`start_run` creates the run first (config + stack) and then records each trial as it finishes,
so a crash or kill -9 loses at most the trials in flight; `resume_run` runs exactly the planned
(task, attempt) pairs with no record, and `rerun` replaces chosen trials with new ones that
supersede them.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from trialbook.agents import get_agent
from trialbook.agents.base import agent_stack, with_agent_stack
from trialbook.errors import TrialbookError, UserError
from trialbook.extras import require
from trialbook.harness.config import Plan, RunConfig, Tally
from trialbook.harness.executors import Executor, LocalExecutor
from trialbook.harness.lock import run_lock
from trialbook.harness.pool import check_runtime, execute
from trialbook.harness.stack import sandbox_stack
from trialbook.ledger.rows import RunRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome
from trialbook.records import Run
from trialbook.tasks import TaskError, TaskSpec


def start_run(
    ledger: Ledger, name: str, config: RunConfig, replace: bool = False, executor: Executor | None = None
) -> tuple[Tally, list[TaskError]]:
    agent = get_agent(config.agent, config.agent_options)
    specs, errors = config.load_tasks()
    engine = executor or LocalExecutor()
    check_grader(specs, local=engine.name == "local")
    check_runtime(engine, config.runtime)
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
    plans = planned(config, tasks)
    with run_lock(config, name, ledger):  # before --replace can delete a run another process is executing
        run_id = open_run(ledger, run, config, specs, replace)
        return _execute(ledger, engine, run_id, name, config, plans), errors


def planned(config: RunConfig, tasks: list[TaskSpec | TaskError]) -> list[Plan]:
    """Every (task, attempt) of the run; for the patch agent (grade, reverify) only those it has a patch for."""
    plans = [Plan(t, a) for a in range(config.attempts) for t in tasks]
    patches = config.agent_options.get("patches") if config.agent == "patch" else None
    if isinstance(patches, dict):
        plans = [p for p in plans if str(p.attempt) in patches.get(p.task.task_id, {})]
    return plans


def _execute(
    ledger: Ledger,
    engine: Executor,
    run_id: int,
    name: str,
    config: RunConfig,
    plans: list[Plan],
    timeout_multiplier: float | None = None,
) -> Tally:
    """`execute`; the patch agent, which applies one stored patch per (task, attempt), runs once per attempt."""
    if config.agent != "patch" or config.attempts == 1:
        return execute(ledger, engine, run_id, name, config, plans, timeout_multiplier)
    tally = Tally(total=len(plans))
    for attempt in sorted({p.attempt for p in plans}):
        options = {**config.agent_options, "attempt": attempt}
        part = execute(ledger, engine, run_id, name, config.model_copy(update={"agent_options": options}),
                       [p for p in plans if p.attempt == attempt], timeout_multiplier)  # fmt: skip
        for key in ("done", "resolved", "errors", "folder_warnings"):
            setattr(tally, key, getattr(tally, key) + getattr(part, key))
        tally.deadline_hit |= part.deadline_hit
    return tally


def check_grader(specs: list[TaskSpec], local: bool) -> None:
    """Tasks that list FAIL_TO_PASS / PASS_TO_PASS are graded per test by swebench's parsers: without the
    extra, refuse before any trial runs (else each would end infra_error, GraderUnavailableError). A Ray
    node grades with its own packages."""
    if local and any(s.lists_tests for s in specs):
        require("swebench", "grading tasks that list FAIL_TO_PASS / PASS_TO_PASS (the example tasks do)")


def open_run(ledger: Ledger, run: Run, config: RunConfig, specs: list[TaskSpec], replace: bool) -> int:
    """Record a new run and its tasks; with `replace`, the replaced run's trial folders go too.

    With `replace`, call it holding `run_lock(config, run.name)`: a live run must not lose its folders."""
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, run, replace=replace)
        ledger.upsert_tasks(conn, [s.record() for s in specs])
    if replace:  # the replaced run's trial folders would otherwise be read back with the new ones
        for old in config.paths(run.name).trial_folders():
            shutil.rmtree(old, ignore_errors=True)
    return run_id


def _stored(ledger: Ledger, name: str) -> tuple[RunRow, RunConfig]:
    run = ledger.get_run(name)
    try:
        return run, RunConfig.model_validate(run.config)
    except ValidationError as exc:
        if "agent" not in run.config or "tasks_dir" not in run.config:
            raise UserError(f"run '{name}' was not made by `trialbook run` (imported runs cannot be resumed)") from None
        first = exc.errors()[0]  # e.g. a timeout multiplier of inf, stored before non-finite numbers were refused
        where = ".".join(map(str, first["loc"]))
        raise UserError(f"run '{name}': its stored config cannot be run again: {where}: {first['msg']}") from None


def resume_run(ledger: Ledger, name: str, executor: Executor | None = None) -> tuple[Tally, int]:
    """Remove the run's leftover containers (on every node of a cluster), then run every planned trial that
    has no record. Returns (tally, leftover containers removed)."""
    run, config = _stored(ledger, name)
    engine = executor or LocalExecutor()
    specs, errors = config.load_tasks()
    tasks: list[TaskSpec | TaskError] = sorted([*specs, *errors], key=lambda t: t.task_id)
    with run_lock(config, name, ledger):  # the containers of a live run are not leftovers
        removed, _ = engine.clean(name, images=False, ledger=ledger.id)
        recorded = {(t.task_id, t.attempt) for t in ledger.trial_rows(run.id, current_only=False)}
        plans = [p for p in planned(config, tasks) if (p.task.task_id, p.attempt) not in recorded]
        return _execute(ledger, engine, run.id, name, config, plans), removed


def rerun(
    ledger: Ledger, name: str, where: str, timeout_multiplier: float | None = None, executor: Executor | None = None
) -> Tally:
    """Run again the current trials whose outcome is `where`; each new trial supersedes its old one."""
    try:
        outcome = Outcome(where)
    except ValueError:
        raise UserError(f"--where must be one of: {', '.join(o.value for o in Outcome)}") from None
    run, config = _stored(ledger, name)
    engine = executor or LocalExecutor()
    specs, errors = config.load_tasks()
    by_id: dict[str, TaskSpec | TaskError] = {t.task_id: t for t in [*specs, *errors]}
    with run_lock(config, name, ledger):
        engine.clean(name, images=False, ledger=ledger.id)
        targets = [t for t in ledger.trial_rows(run.id) if t.outcome == outcome.value]
        missing = sorted({t.task_id for t in targets} - set(by_id))
        if missing:
            raise TrialbookError(f"task folder(s) no longer in {config.tasks_dir}: {', '.join(missing)}")
        plans = [Plan(by_id[t.task_id], t.attempt, t.id, (t.extra or {}).get("trial_name")) for t in targets]
        tally = _execute(ledger, engine, run.id, name, config, plans, timeout_multiplier)
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


def clean(run: str | None = None, ledger: Ledger | None = None, executor: Executor | None = None) -> tuple[int, int]:
    """Remove the containers (and built images) of `run` or of every run; with `ledger`, only that ledger's."""
    return (executor or LocalExecutor()).clean(run, ledger=ledger.id if ledger else None)

"""Starting a run, written once: `run` (with `grade`, `reverify` and `quickstart` through it), `resume`,
`rerun`, `validate` and the RL rollouts (rl/rollout.py) all go through `prepare` and `RunStart.opened`.

The order is the rule: each step refuses with one line before any container starts or any row is written.
1. The agent is built once from the config (an unknown agent or a bad option is a UserError).
2. The tasks are loaded (an unusable folder becomes a TaskError, recorded as an infra_error trial).
3. The executor connects; tasks that list FAIL_TO_PASS / PASS_TO_PASS need the swebench extra locally
   (`check_grader`), and the OCI runtime asked for must be one the local daemon has (`check_runtime`).
4. `opened` takes the run lock (harness/run/lock.py) and only then records the run (`open_run`): a `--replace`
   must not delete the folders of a run another process is executing (tests/harness/test_harness_docker.py:
   test_ctrl_c_stops_cleanly_and_a_live_run_cannot_be_resumed_twice).
The run record's stack is `sandbox_stack` plus the agent's serving stack, whoever starts it, so `compare`
checks every kind of run against the same keys.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from trialbook.agents import get_agent
from trialbook.agents.base import Agent, agent_stack, with_agent_stack
from trialbook.errors import UserError
from trialbook.extras import present
from trialbook.harness.placement.executors import Executor, LocalExecutor
from trialbook.harness.run.config import RunConfig
from trialbook.harness.run.lock import run_lock
from trialbook.harness.run.stack import sandbox_stack
from trialbook.harness.trial.execution import TrialSettings
from trialbook.ledger.rows import RunRow
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.sandbox.box import RuntimeUnknownError
from trialbook.sandbox.docker import LABEL_LEDGER, LABEL_RUN_ID
from trialbook.tasks import TaskError, TaskSpec


@dataclass
class RunStart:
    """A run's config, its executor, its agent (None where the caller builds its own: validate's two, the
    rollouts' per endpoint) and its loaded tasks, checked by `prepare`."""

    config: RunConfig
    executor: Executor
    agent: Agent | None
    specs: list[TaskSpec]
    errors: list[TaskError]

    @property
    def tasks(self) -> list[TaskSpec | TaskError]:
        """Every task of the run, usable or not, by task id."""
        return sorted([*self.specs, *self.errors], key=lambda t: t.task_id)

    def stack(self, agent: str | None = None, serving: dict[str, Any] | None = None) -> dict[str, Any]:
        """The stack recorded on the run: the sandbox's, and the serving stack of `serving` or of the agent."""
        if serving is None and self.agent is not None:
            serving = agent_stack(self.agent)
        return with_agent_stack(sandbox_stack(self.executor, agent or self.config.agent, self.specs, {}), serving)

    @contextmanager
    def opened(
        self,
        ledger: Ledger,
        run: Run,
        replace: bool = False,
        specs: list[TaskSpec] | None = None,
        append: bool = False,
    ) -> Iterator[int]:
        """Hold the run lock, record `run` and its tasks (`specs`, else this start's), and yield its id.

        `append`: a run of this name and kind is kept and its id yielded (a restarted trainer); one of
        another kind is refused."""
        with run_lock(self.config, run.name, ledger):
            if append and (existing := _existing(ledger, run.name)) is not None:
                if existing.kind != run.kind:
                    raise UserError(f"run '{run.name}' exists and is not a {run.kind} run")
                yield existing.id
                return
            yield open_run(ledger, run, self.config, self.specs if specs is None else specs, replace)


def _existing(ledger: Ledger, name: str) -> RunRow | None:
    try:
        return ledger.get_run(name)
    except UserError:
        return None


def prepare(
    config: RunConfig, executor: Executor | None = None, *, agent: bool = True, grader: bool = True
) -> RunStart:
    """Build the agent (unless `agent=False`), load the tasks, connect, check grader and runtime, in that order.

    `grader=False` where a task that cannot be graded is to be reported per task (validate's infra_error
    verdict) rather than refused."""
    built = get_agent(config.agent, config.agent_options) if agent else None
    specs, errors = config.load_tasks()
    engine = executor or LocalExecutor()
    if grader:
        check_grader(specs, local=engine.name == "local")
    check_runtime(engine, config.runtime)
    return RunStart(config, engine, built, specs, errors)


def check_grader(specs: list[TaskSpec], local: bool) -> None:
    """Tasks that list FAIL_TO_PASS / PASS_TO_PASS are graded per test by swebench's parsers: without the
    extra (its package not found: `present`, no import), refuse before any trial runs (else each would end
    infra_error, GraderUnavailableError); the import itself starts in a thread (`_import_grader`). A Ray node grades
    with its own packages."""
    if local and any(s.lists_tests for s in specs):
        present("swebench", "grading tasks that list FAIL_TO_PASS / PASS_TO_PASS (the example tasks do)")
        threading.Thread(target=_import_grader, name="trialbook-grader-import").start()


def _import_grader() -> None:
    """Import the grader (swebench: ~0.75 s, datasets and modal with it) while the first containers start, rather
    than before them; the first trial that grades waits on the same import (Python's per-module import lock). A
    failure is left to that trial, whose own import names the cause (verify/runner._grader: GraderUnavailableError).
    Not a daemon thread: the interpreter does not exit in the middle of an extension module's import."""
    with suppress(Exception):  # reported by the trial that grades (above)
        import trialbook.verify.grading  # noqa: F401


def check_runtime(executor: Executor, runtime: str) -> None:
    """A runtime this daemon lacks is one line (UserError) before any trial; a Ray node's daemon is asked by its
    first trial (a ContainerStartError there)."""
    if isinstance(executor, LocalExecutor):
        try:
            executor.engine.runtime_for(runtime)
        except RuntimeUnknownError as exc:
            raise UserError(str(exc)) from None


def open_run(ledger: Ledger, run: Run, config: RunConfig, specs: list[TaskSpec], replace: bool) -> int:
    """Record a new run and its tasks; with `replace`, the replaced run's trial folders go too.

    With `replace`, call it holding `run_lock(config, run.name)` (`RunStart.opened` does): a live run must
    not lose its folders."""
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, run, replace=replace)
        ledger.upsert_tasks(conn, [s.record() for s in specs])
    if replace:  # the replaced run's trial folders would otherwise be read back with the new ones
        for old in config.paths(run.name).trial_folders():
            shutil.rmtree(old, ignore_errors=True)
    return run_id


def trial_settings(
    ledger: Ledger, run_id: int, run_name: str, config: RunConfig, agent: Agent, timeout_multiplier: float | None = None
) -> TrialSettings:
    """How each trial of the run runs; its containers carry the ledger's and the run's id (what `clean` and a
    resume's leftover sweep select by, so two ledgers using one run name never touch each other's)."""
    return TrialSettings(
        run=run_name,
        agent=agent,
        timeout_multiplier=timeout_multiplier or config.timeout_multiplier,
        retries=config.retries,
        backoff_s=config.backoff_s,
        labels={LABEL_LEDGER: ledger.id, LABEL_RUN_ID: str(run_id)},
        runtime=config.runtime,
        hack_policy=config.hack_policy,
    )

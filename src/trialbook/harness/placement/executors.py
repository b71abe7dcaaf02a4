"""Where trials run: `local` (a thread pool against this machine's Docker daemon) or `ray`
(harness/placement/raycluster.py).

`run_trial` is the same function on both; an executor only decides where it runs. The caller (harness/run/execute.py)
stays the only ledger writer: it records each (plan, result) the executor yields as soon as it is yielded.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from trialbook.harness.run.config import PlannedTrial
from trialbook.harness.run.stack import connect
from trialbook.harness.trial.execution import Interrupted, Stopper, TrialResult, TrialSettings, run_trial
from trialbook.sandbox.backend import Backend
from trialbook.tasks import TaskError, TaskSpec

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    name: str

    def version(self) -> str:
        """The Docker Engine version the trials run on (recorded in the run's stack)."""
        ...

    def run_one(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
    ) -> TrialResult:
        """One trial, blocking (the rollout API calls it from a thread)."""
        ...

    def results(
        self,
        plans: list[PlannedTrial],
        settings: TrialSettings,
        stopper: Stopper,
        concurrency: int,
        deadline_at: float | None,
    ) -> Iterator[tuple[PlannedTrial, TrialResult | None]]:
        """Run `plans`, at most `concurrency` at once; yield each as it finishes (None: interrupted, not recorded)."""
        ...

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        """Remove the run's labelled containers (and images) wherever trials may have run (with `ledger`,
        only those that ledger's runs started)."""
        ...


class LocalExecutor:
    """Today's thread pool: every trial against this machine's Docker daemon."""

    name = "local"

    def __init__(self, engine: Backend | None = None) -> None:
        self.engine: Any = engine or connect()
        self.backend = self.engine.name  # recorded in the run's stack (harness/run/stack.sandbox_stack)

    def version(self) -> str:
        version: str = self.engine.version()
        return version

    def run_one(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
    ) -> TrialResult:
        return run_trial(self.engine, task, attempt, settings, stopper)

    def results(
        self,
        plans: list[PlannedTrial],
        settings: TrialSettings,
        stopper: Stopper,
        concurrency: int,
        deadline_at: float | None,
    ) -> Iterator[tuple[PlannedTrial, TrialResult | None]]:
        for batch in self.batches(plans, settings, stopper, concurrency, deadline_at):
            yield from batch

    def batches(
        self,
        plans: list[PlannedTrial],
        settings: TrialSettings,
        stopper: Stopper,
        concurrency: int,
        deadline_at: float | None,
    ) -> Iterator[list[tuple[PlannedTrial, TrialResult | None]]]:
        """As `results`, but every trial that has finished by the time the caller asks comes in one list (the caller
        records them in one ledger transaction: benchmarks/bench_scale.py). Finished futures reach a queue through
        their done-callbacks: `wait` on all pending futures costs O(trials in flight) a call, O(n^2) a run."""

        def one(plan: PlannedTrial) -> TrialResult | None:
            try:
                return self.run_one(plan.task, plan.attempt, settings, stopper)
            except Interrupted:
                return None

        done: queue.SimpleQueue[Future[TrialResult | None]] = queue.SimpleQueue()
        pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="trial")
        try:
            pending: dict[Future[TrialResult | None], PlannedTrial] = {}
            for p in plans:
                fut = pool.submit(one, p)
                pending[fut] = p
                fut.add_done_callback(done.put)
            while pending:
                try:
                    ready = [done.get(timeout=0.5)]
                except queue.Empty:
                    continue
                with contextlib.suppress(queue.Empty):
                    while True:
                        ready.append(done.get_nowait())
                yield [(pending.pop(fut), fut.result()) for fut in ready]
        except BaseException:  # Ctrl-C (or the consumer stopped): stop the execs in flight before waiting for them
            stopper.fire("interrupt")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        cleaned: tuple[int, int] = self.engine.clean(run, images=images, ledger=ledger)
        return cleaned

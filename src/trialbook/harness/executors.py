"""Where trials run: `local` (a thread pool against this machine's Docker daemon) or `ray` (harness/raycluster.py).

`run_trial` is the same function on both; an executor only decides where it runs. The caller (harness/pool.py)
stays the only ledger writer: it records each (plan, result) the executor yields as soon as it is yielded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Protocol

from trialbook.errors import UserError
from trialbook.harness.config import Plan
from trialbook.harness.stack import connect
from trialbook.harness.trial import Interrupted, Stopper, TrialResult, TrialSettings, run_trial
from trialbook.sandbox import DockerEngine
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
        self, plans: list[Plan], settings: TrialSettings, stopper: Stopper, concurrency: int, deadline_at: float | None
    ) -> Iterator[tuple[Plan, TrialResult | None]]:
        """Run `plans`, at most `concurrency` at once; yield each as it finishes (None: interrupted, not recorded)."""
        ...

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        """Remove the run's labelled containers (and images) wherever trials may have run (with `ledger`,
        only those that ledger's runs started)."""
        ...


class LocalExecutor:
    """Today's thread pool: every trial against this machine's Docker daemon."""

    name = "local"

    def __init__(self, engine: DockerEngine | None = None) -> None:
        self.engine = engine or connect()

    def version(self) -> str:
        return self.engine.version()

    def run_one(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
    ) -> TrialResult:
        return run_trial(self.engine, task, attempt, settings, stopper)

    def results(
        self, plans: list[Plan], settings: TrialSettings, stopper: Stopper, concurrency: int, deadline_at: float | None
    ) -> Iterator[tuple[Plan, TrialResult | None]]:
        def one(plan: Plan) -> TrialResult | None:
            try:
                return run_trial(self.engine, plan.task, plan.attempt, settings, stopper)
            except Interrupted:
                return None

        pool = ThreadPoolExecutor(max_workers=concurrency)
        try:
            pending: dict[Future[TrialResult | None], Plan] = {pool.submit(one, p): p for p in plans}
            while pending:
                finished, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield pending.pop(fut), fut.result()
        except BaseException:  # Ctrl-C (or the consumer stopped): stop the execs in flight before waiting for them
            stopper.fire("interrupt")
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        return self.engine.clean(run, images=images, ledger=ledger)


def make_executor(kind: str = "local", address: str | None = None) -> Executor:
    """`local`, or `ray` on the cluster at `address` (else $RAY_ADDRESS, else the cluster this machine is part of)."""
    if kind == "local":
        if address:
            raise UserError("--ray-address goes with --executor ray")
        return LocalExecutor()
    if kind == "ray":
        from trialbook.extras import require

        require("ray", "--executor ray")
        from trialbook.harness.raycluster import RayExecutor

        return RayExecutor(address or os.environ.get("RAY_ADDRESS") or "auto")
    raise UserError(f"--executor must be one of: {', '.join(EXECUTORS)} (got '{kind}')")

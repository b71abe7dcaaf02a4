"""A warm sandbox pool: containers created and started before a trial asks for one.

A container's start (create, start, shell-setup copy) and its removal are most of a short trial's
overhead. While a run's trials work, the pool keeps, per container spec (image, limits, network,
env, workdir, shell setup, labels), a few started containers waiting; `DockerEngine.start` takes
one instead of creating it, and `Sandbox.remove` hands the finished container to the pool's
background workers instead of waiting for the daemon. A pooled container is handed out once and
never comes back: every trial (and every verifier try) still gets a fresh container.

Bounds: at most `depth` warm containers per spec and `limit` in all (the run's concurrency sets
both), no more than the trials still planned for that task need, and their memory limits summed
stay under the daemon host's memory. Waiting containers carry the run's labels plus LABEL_POOL,
so a pool left by a killed run is removed by `resume` and `clean` like any other leftover.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

LABEL_POOL = "trialbook.pool"


@dataclass(frozen=True)
class Spec:
    """Everything a container is created with, except its name: equal specs give equal containers."""

    image: str
    cpus: float
    memory_mb: int
    pids_limit: int
    network: bool
    env: tuple[tuple[str, str], ...]
    workdir: str | None
    shell_setup: str | None
    labels: tuple[tuple[str, str], ...]

    @property
    def task(self) -> str:
        return dict(self.labels).get("trialbook.task", "")


@dataclass
class Warm:
    id: str
    name: str


class WarmPool:
    """Started containers per Spec, taken once each; removals run in the background."""

    def __init__(
        self,
        create: Callable[[Spec, str], str],
        remove: Callable[[str], None],
        depth: int,
        limit: int,
        memory_mb: int | None = None,
        workers: int = 2,
    ) -> None:
        self._create, self._remove = create, remove
        self.depth, self.limit, self.memory_mb = depth, limit, memory_mb
        self._warm: dict[Spec, deque[Warm]] = {}
        self._creating: dict[Spec, int] = {}
        self._demand: dict[str, int] = {}  # task id -> containers its remaining trials still need
        self._lock = threading.RLock()  # re-entered when a job runs inline or ends at once
        self._jobs = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tb-warm")
        self._pending: set[Future[None]] = set()
        self._closed = False
        self.stats = {"taken": 0, "cold": 0, "created": 0, "removed": 0, "remove_errors": 0, "wasted": 0}

    # ---- the run tells the pool what is coming -----------------------------------------
    def plan(self, demand: dict[str, int]) -> None:
        """Containers each task's planned trials will ask for (agent + verifier tries, roughly)."""
        with self._lock:
            for task, n in demand.items():
                self._demand[task] = self._demand.get(task, 0) + n

    # ---- the engine's hooks ------------------------------------------------------------
    def take(self, spec: Spec) -> Warm | None:
        """A started container of `spec`, or None (the caller starts one itself); refills behind it."""
        with self._lock:
            queue = self._warm.get(spec)
            got = queue.popleft() if queue else None
            self._demand[spec.task] = max(self._demand.get(spec.task, 0) - 1, 0)
            self.stats["taken" if got else "cold"] += 1
            self._fill(spec)
        return got

    def discard(self, container_id: str) -> None:
        """Remove a finished container in the background (the trial does not wait for the daemon)."""
        self._submit(self._remove_one, container_id)

    def close(self) -> None:
        """Remove every waiting container and wait for every removal and creation to end."""
        with self._lock:
            self._closed = True
            leftovers = [w for queue in self._warm.values() for w in queue]
            self._warm.clear()
        for w in leftovers:
            self._submit(self._remove_one, w.id)
        while True:
            with self._lock:
                pending = list(self._pending)
            if not pending:
                break
            for fut in pending:
                with contextlib.suppress(Exception):
                    fut.result()
        self._jobs.shutdown(wait=True)

    # ---- inside ------------------------------------------------------------------------
    def _count(self) -> int:
        return sum(len(q) for q in self._warm.values()) + sum(self._creating.values())

    def _fits(self, spec: Spec) -> bool:
        if self._count() >= self.limit:
            return False
        if self.memory_mb is None:
            return True
        held = sum(s.memory_mb * (len(q) + self._creating.get(s, 0)) for s, q in self._warm.items())
        return held + spec.memory_mb <= self.memory_mb

    def _fill(self, spec: Spec) -> None:
        """Start creations of `spec` up to its depth and its task's remaining demand (lock held)."""
        while not self._closed:
            have = len(self._warm.get(spec, ())) + self._creating.get(spec, 0)
            if have >= min(self.depth, self._demand.get(spec.task, 0)) or not self._fits(spec):
                return
            self._creating[spec] = self._creating.get(spec, 0) + 1
            self._submit_locked(self._create_one, spec)

    def _create_one(self, spec: Spec) -> None:
        name = _pool_name(spec)
        try:
            cid = self._create(spec, name)
        except Exception:  # a failed warm-up costs nothing: the trial starts its own container
            with self._lock:
                self._creating[spec] -= 1
            return
        with self._lock:
            self._creating[spec] -= 1
            self.stats["created"] += 1
            if self._closed or self._demand.get(spec.task, 0) <= len(self._warm.get(spec, ())):
                self.stats["wasted"] += 1
                late = True
            else:
                self._warm.setdefault(spec, deque()).append(Warm(cid, name))
                late = False
        if late:
            self._remove_one(cid)

    def _remove_one(self, container_id: str) -> None:
        try:
            self._remove(container_id)
            key = "removed"
        except Exception:  # left for `clean` / `resume`, which find it by its labels
            key = "remove_errors"
        with self._lock:
            self.stats[key] += 1

    def _submit(self, fn: Callable[[Any], None], arg: Any) -> None:
        with self._lock:
            self._submit_locked(fn, arg)

    def _submit_locked(self, fn: Callable[[Any], None], arg: Any) -> None:
        try:
            fut = self._jobs.submit(fn, arg)
        except RuntimeError:  # shut down: do it here
            fn(arg)
            return
        self._pending.add(fut)
        fut.add_done_callback(self._done)

    def _done(self, fut: Future[None]) -> None:
        with self._lock:
            self._pending.discard(fut)


def _pool_name(spec: Spec) -> str:
    labels = dict(spec.labels)
    run = "".join(ch if ch.isalnum() or ch in "_.-" else "-" for ch in labels.get("trialbook.run", "run"))[:30]
    return f"tb-{run.strip('-.') or 'run'}-warm-{secrets.token_hex(5)}"

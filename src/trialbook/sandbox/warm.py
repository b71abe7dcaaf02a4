"""A warm sandbox pool: containers created and started before a trial asks for one.

A container's start (create, start, shell-setup copy) and its removal are most of a short trial's
overhead. While a run's trials work, the pool keeps, per container spec (image, limits, network,
env, workdir, shell setup, labels), a few started containers waiting; `DockerEngine.start` takes
one instead of creating it, and `Sandbox.remove` hands the finished container to the pool's
background workers instead of waiting for the daemon. A pooled container is handed out once and
never comes back: every trial (and every verifier try) still gets a fresh container. A verifier's
containers are a spec of their own (`prepare`): while warm, each also runs the harness's preparation
(verify/isolation.py: the image's side of the agent's diff), so that work is off the trial's path too;
they start warming when a trial's agent starts (`expect`). A take that finds none ready waits for a
creation already in flight rather than starting one more container.

Bounds: at most `depth` warm containers per spec and `limit` in all (the run's concurrency sets
both), no more than the trials still planned for that task and role need, and their memory limits summed
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
WAIT_S = 60.0  # longest a take waits for a creation in flight before starting its own container


@dataclass(frozen=True)
class Spec:
    """Everything a container is created with, except its name: equal specs give equal containers."""

    image: str
    cpus: float
    memory_mb: int
    pids_limit: int
    network: str  # sandbox/backend.py network_mode
    env: tuple[tuple[str, str], ...]
    workdir: str | None
    shell_setup: str | None
    labels: tuple[tuple[str, str], ...]
    prepare: str = ""  # what a warm container of this spec is prepared for ("": nothing; "verifier")
    runtime: str = "auto"  # the OCI runtime asked for: "auto", "default" or a name (DockerEngine.runtime_for)
    mounts: tuple[tuple[str, str, bool], ...] = ()  # (host path, container path, read-only): an agent's own

    @property
    def role(self) -> tuple[str, str]:
        """Whom the spec's containers serve: (task id, "agent" or what they are prepared for)."""
        return dict(self.labels).get("trialbook.task", ""), self.prepare or "agent"


@dataclass
class Warm:
    id: str
    name: str
    prepared: Any = None  # what the spec's prepare step returned


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
        self._demand: dict[tuple[str, str], int] = {}  # Spec.role -> containers the remaining trials still need
        self._prepare: dict[Spec, Callable[[str, str], Any] | None] = {}
        self._lock = threading.RLock()  # re-entered when a job runs inline or ends at once
        self._ready = threading.Condition(self._lock)  # a creation ended (its container waits, or it failed)
        self._waiting: dict[Spec, int] = {}  # takes waiting for a creation of that spec in flight
        self._jobs = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tb-warm")
        self._pending: set[Future[None]] = set()
        self._closed = False
        self._unremoved: set[str] = set()  # removals that failed (the daemon away): tried again
        self.stats = {"taken": 0, "cold": 0, "created": 0, "prepared": 0, "removed": 0, "remove_errors": 0, "wasted": 0}

    # ---- the run tells the pool what is coming -----------------------------------------
    def plan(self, demand: dict[tuple[str, str], int]) -> None:
        """Containers the planned trials will ask for, per (task id, "agent" or "verifier")."""
        with self._lock:
            for task, n in demand.items():
                self._demand[task] = self._demand.get(task, 0) + n

    # ---- the engine's hooks ------------------------------------------------------------
    def take(self, spec: Spec, prepare: Callable[[str, str], Any] | None = None) -> Warm | None:
        """A started container of `spec`, or None (the caller starts one itself); refills behind it.
        `prepare(id, name)` runs on each new warm container of a spec with `prepare` set (None: such
        containers wait unprepared): a container it fails on (None or an exception) is removed, never
        handed out."""
        with self._lock:
            if spec.prepare:
                self._prepare[spec] = prepare
            self._demand[spec.role] = max(self._demand.get(spec.role, 0) - 1, 0)
            got = self._pop(spec)
            if got is None and self._creating.get(spec, 0) > self._waiting.get(spec, 0):
                # that creation started before a cold start would: wait for it rather than start another
                self._waiting[spec] = self._waiting.get(spec, 0) + 1
                try:
                    self._ready.wait_for(
                        lambda: bool(self._warm.get(spec)) or not self._creating.get(spec, 0) or self._closed, WAIT_S
                    )
                    got = self._pop(spec)
                finally:
                    self._waiting[spec] -= 1
            self.stats["taken" if got else "cold"] += 1
            self._fill(spec)
        return got

    def _pop(self, spec: Spec) -> Warm | None:
        queue = self._warm.get(spec)
        return queue.popleft() if queue else None

    def expect(self, spec: Spec, prepare: Callable[[str, str], Any] | None = None) -> None:
        """Warm containers of `spec` now, within its role's demand: take() will ask for them later."""
        with self._lock:
            if spec.prepare:
                self._prepare[spec] = prepare
            self._fill(spec)

    def discard(self, container_id: str) -> None:
        """Remove a finished container in the background (the trial does not wait for the daemon)."""
        self._submit(self._remove_one, container_id)

    def flush(self) -> int:
        """Remove every waiting container (a daemon that restarted killed them: handed out, each would fail its trial
        again); later takes start or wait for fresh ones. How many were waiting."""
        stale = self._drain()
        for cid in stale:
            self._submit(self._remove_one, cid)
        return len(stale)

    def close(self) -> None:
        """Remove every waiting container and wait for every removal and creation to end."""
        with self._lock:
            self._closed = True
            self._ready.notify_all()
            leftovers = self._drain()
        for cid in leftovers:
            self._submit(self._remove_one, cid)
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
    def _drain(self) -> list[str]:
        """The waiting containers' ids and those whose removal failed, none of them kept."""
        with self._lock:
            ids = [w.id for queue in self._warm.values() for w in queue] + sorted(self._unremoved)
            self._warm.clear()
            self._unremoved.clear()
        return ids

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
            have = len(self._warm.get(spec, ())) + self._creating.get(spec, 0) - self._waiting.get(spec, 0)
            if have >= min(self.depth, self._demand.get(spec.role, 0)) or not self._fits(spec):
                return
            self._creating[spec] = self._creating.get(spec, 0) + 1
            self._submit_locked(self._create_one, spec)

    def _create_one(self, spec: Spec) -> None:
        name = _pool_name(spec)
        try:
            cid = self._create(spec, name)
        except Exception:  # a failed warm-up costs nothing: the trial starts its own container
            self._created(spec, None)
            return
        prepared = None
        hook = self._prepare.get(spec)
        if hook is not None:
            with contextlib.suppress(Exception):
                prepared = hook(cid, name)
            if prepared is None:  # never handed out half-prepared
                self._remove_one(cid)
                self._created(spec, None)
                return
        if not self._created(spec, Warm(cid, name, prepared)):
            self._remove_one(cid)

    def _created(self, spec: Spec, warm: Warm | None) -> bool:
        """A creation ended: queue its container (False: not needed any more, or none was made)."""
        with self._lock:
            self._creating[spec] -= 1
            if warm is not None:
                self.stats["created"] += 1
                self.stats["prepared"] += warm.prepared is not None
                need = self._demand.get(spec.role, 0) + self._waiting.get(spec, 0)
                if self._closed or need <= len(self._warm.get(spec, ())):
                    self.stats["wasted"] += 1
                    warm = None
                else:
                    self._warm.setdefault(spec, deque()).append(warm)
            self._ready.notify_all()
            return warm is not None

    def _remove_one(self, container_id: str) -> None:
        try:
            self._remove(container_id)
            key = "removed"
        except Exception:  # tried again at the next flush (the daemon back) and at close; else `clean` finds it
            key = "remove_errors"
            with self._lock:
                self._unremoved.add(container_id)
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

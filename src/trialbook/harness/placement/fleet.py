"""One run over several Docker (or Podman) endpoints: `trialbook run --engine URL[=N]` (repeatable).

Each endpoint is a backend of its own (the run's --backend, Docker's or Podman's, at that URL) with a capacity N
(default: the run's --concurrency split evenly): a trial takes a slot on the endpoint with the most free ones and runs
there whole, its image built or copied on that endpoint (on first use, as on one daemon), its warm containers from that
endpoint's own pool. An endpoint that stops answering is lost: a trial that ended there while it no longer answers
(an infrastructure error, or a grade of tests its stopping daemon killed) is run again from the start on another
(`extra.lost_engines`; each (task, attempt) still recorded once), and no trial is placed on it again. Ray stays the
way to spread over machines with a scheduler; an engine list is the way without a cluster.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from typing import Any

import docker

from trialbook.errors import UserError
from trialbook.extra_schema import with_extra
from trialbook.harness.placement.executors import LocalExecutor
from trialbook.harness.trial.execution import Stopper, TrialResult, TrialSettings, run_trial
from trialbook.sandbox.backend import backend_class
from trialbook.sandbox.box import DaemonError
from trialbook.tasks import TaskError, TaskSpec


@dataclass
class EngineEndpoint:
    url: str
    capacity: int
    engine: Any  # a Backend at url
    running: int = 0
    lost: bool = False
    trials: int = 0  # trials placed here (all tries)


def parse_engine(spec: str) -> tuple[str, int | None]:
    """`URL` or `URL=N` (N trials at once there); a bad one is one line."""
    url, eq, n = spec.rpartition("=")
    if not eq or "://" not in url:
        url, n = spec, ""
    if n and not n.isdigit() or n == "0":
        raise UserError(f"--engine {spec}: the capacity after '=' must be a whole number >= 1")
    if "://" not in url:
        raise UserError(f"--engine {spec}: give the endpoint as a URL (unix:///path/docker.sock, tcp://host:2375)")
    return url, int(n) if n else None


class PoolFanout:
    """The run's warm pool as harness/run/execute.py drives it: one pool per endpoint, the demand shared by capacity."""

    def __init__(self, endpoints: list[EngineEndpoint]) -> None:
        self.endpoints = endpoints
        self.warm: Any = None

    def open_pool(self, concurrency: int) -> PoolFanout:
        for ep in self.endpoints:
            ep.engine.open_pool(ep.capacity)
        return self

    def plan(self, demand: dict[tuple[str, str], int]) -> None:
        total = sum(ep.capacity for ep in self.endpoints)
        for ep in self.endpoints:
            share = {key: max(1, n * ep.capacity // total) for key, n in demand.items()}
            if ep.engine.warm is not None:
                ep.engine.warm.plan(share)

    def close_pool(self) -> None:
        for ep in self.endpoints:
            if ep.lost:  # its daemon is gone: nothing of its pool can be removed now (`clean` does, once it is back)
                with contextlib.suppress(Exception):
                    ep.engine.warm = None
                continue
            ep.engine.close_pool()

    def runtime_for(self, wanted: str) -> str | None:
        return self.endpoints[0].engine.runtime_for(wanted)  # type: ignore[no-any-return]


class EnginesExecutor(LocalExecutor):
    """LocalExecutor's thread pool, each trial on one of several endpoints (see the module's docstring)."""

    def __init__(self, specs: list[str], concurrency: int, backend: str = "docker") -> None:
        parsed = [parse_engine(s) for s in specs]
        if len({url for url, _ in parsed}) < len(parsed):
            raise UserError("--engine: the same endpoint is named twice")
        cls = backend_class(backend)
        self.endpoints: list[EngineEndpoint] = []
        even = max(1, -(-concurrency // len(parsed)))
        for url, cap in parsed:
            try:
                engine = cls(url=url)
            except DaemonError as exc:
                raise UserError(f"--engine {url}: {str(exc).splitlines()[0]}") from None
            self.endpoints.append(EngineEndpoint(url, cap or even, engine))
        self.engine: Any = PoolFanout(self.endpoints)
        self.backend = backend
        self._cond = threading.Condition()
        self._versions: str | None = None

    def version(self) -> str:
        """The endpoints' versions, asked once (the stack is written again at the end, when one may be gone)."""
        if self._versions is None:
            self._versions = ", ".join(sorted({ep.engine.version() for ep in self.endpoints}))
        return self._versions

    def _take(self, avoid: set[str], stopper: Stopper) -> EngineEndpoint:
        """A slot on the endpoint with the most free ones (not one in `avoid` while another is there)."""
        with self._cond:
            while True:
                alive = [ep for ep in self.endpoints if not ep.lost]
                if not alive:
                    raise DaemonError("every --engine endpoint is lost: " + ", ".join(ep.url for ep in self.endpoints))
                fresh = [ep for ep in alive if ep.url not in avoid] or alive
                # a deadline or interrupt: the trial goes where it can at once, and run_trial records how it was stopped
                free = [ep for ep in fresh if ep.running < ep.capacity] or (fresh if stopper.event.is_set() else [])
                if free:
                    ep = max(free, key=lambda e: (e.capacity - e.running, -e.trials))
                    ep.running += 1
                    ep.trials += 1
                    return ep
                self._cond.wait(0.5)

    def _give(self, ep: EngineEndpoint) -> None:
        with self._cond:
            ep.running -= 1
            self._cond.notify_all()

    def _answers(self, ep: EngineEndpoint) -> bool:
        """Whether the endpoint takes a new connection and answers a ping on it: a stopping dockerd closes its socket
        first and stops its containers after, while a kept-alive connection of this process may still be answered."""
        try:
            with docker.APIClient(base_url=ep.url, timeout=10) as fresh:
                return bool(fresh.ping())
        except Exception:  # any failure to answer is a lost endpoint
            return False

    def run_one(
        self, task: TaskSpec | TaskError, attempt: int, settings: TrialSettings, stopper: Stopper
    ) -> TrialResult:
        lost: list[str] = []
        while True:
            try:
                ep = self._take(set(lost), stopper)
            except DaemonError as exc:  # every endpoint gone: the trial is an infrastructure error, recorded once
                result = run_trial(_Gone(str(exc)), task, attempt, settings, stopper)
                result.trial.extra = with_extra(result.trial.extra, lost_engines=lost)
                return result
            try:
                result = run_trial(ep.engine, task, attempt, settings, stopper)
            finally:
                self._give(ep)
            # whatever its outcome: a daemon stopping mid-trial stops the trial's processes first (the agent's command
            # ends with a signal, the tests fail), so a grade from an endpoint that is gone is no grade
            if not self._answers(ep):
                with self._cond:
                    ep.lost = True
                lost.append(ep.url)
                continue  # from the start, elsewhere (run_trial sees a deadline or interrupt at once)
            result.trial.extra = with_extra(result.trial.extra, engine=ep.url)
            if lost:
                result.trial.extra = with_extra(result.trial.extra, lost_engines=lost)
            return result

    def clean(self, run: str | None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        containers = images_n = 0
        for ep in self.endpoints:
            if ep.lost and not self._answers(ep):
                continue
            c, i = ep.engine.clean(run, images=images, ledger=ledger)
            containers, images_n = containers + c, images_n + i
        return containers, images_n


class _Gone:
    """A backend whose every call fails: a trial placed on it is recorded as the infrastructure error it is."""

    name = "gone"

    def __init__(self, why: str) -> None:
        self.why = why
        self.warm = None

    def __getattr__(self, attr: str) -> Any:
        def fail(*_a: Any, **_k: Any) -> Any:
            raise DaemonError(self.why)

        return fail

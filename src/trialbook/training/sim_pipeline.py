"""`sim pipeline`: a discrete-event simulation (SimPy) of asynchronous RL rollouts feeding a trainer.

W workers each run one trajectory at a time; a group of G trajectories of one task is ready when all
G are done. The admission control lets a group start only while fewer than (S + 1) x B groups are
started-but-not-consumed (the staleness bound: a group started at weight version v is trained on by
step v + S + 1 at the latest). The trainer waits for B ready groups, trains for T seconds and
publishes the next weight version. Each epoch is a shuffled pass over P tasks in full batches
(P // B steps; the partial batch is dropped).

Without cross-epoch sampling the data loader is per epoch and restarts only after the epoch's last
step (SkyRL's fully-async trainer): admissions stop S + 1 steps before the boundary and the first
step of the next epoch waits for a whole rollout from an empty pipeline. With cross-epoch sampling
(AReaL, verl, prime-rl) the loader runs on into the next epoch and the boundary is invisible.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

from trialbook.errors import UserError
from trialbook.training.report_types import PipelineResult

# A boundary step is a stall when it waited more than this many times the median step interval.
STALL_FACTOR = 2.0

DurationSampler = Callable[[np.random.Generator, int], np.ndarray]


@dataclass
class PipelineConfig:
    batch: int
    group: int
    staleness: int
    pool: int
    epochs: int
    train_step_s: float
    workers: int
    cross_epoch: bool = False
    seed: int = 0

    def check(self) -> None:
        for name in ("batch", "group", "pool", "epochs", "workers"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if self.batch > self.pool:
            raise UserError(f"--batch {self.batch} is larger than --tasks {self.pool}: an epoch holds no full batch")
        if self.staleness < 0:
            raise UserError(f"--staleness must be >= 0, got {self.staleness}")
        if self.train_step_s < 0:
            raise UserError(f"--train-step-s must be >= 0, got {self.train_step_s}")


def lognormal_sampler(spec: str) -> DurationSampler:
    """`lognormal:MU,SIGMA` (of log seconds) -> sampler; SIGMA 0 gives the constant exp(MU)."""
    kind, _, args = spec.partition(":")
    try:
        mu, sigma = (float(x) for x in args.split(","))
    except ValueError:
        raise UserError(f"--duration-dist must look like lognormal:MU,SIGMA, got {spec!r}") from None
    if kind != "lognormal" or not (sigma >= 0 and np.isfinite([mu, sigma]).all()):  # nan/inf refused
        raise UserError(f"--duration-dist must look like lognormal:MU,SIGMA (finite, SIGMA >= 0), got {spec!r}")
    return lambda rng, n: rng.lognormal(mu, sigma, n) if sigma > 0 else np.full(n, np.exp(mu))


def empirical_sampler(durations: np.ndarray) -> DurationSampler:
    """Resample observed trajectory durations (seconds) with replacement."""
    d = durations[np.isfinite(durations) & (durations > 0)]
    if not len(d):
        raise UserError("that run has no trajectory durations (duration_s) to sample from")
    return lambda rng, n: rng.choice(d, size=n, replace=True)


class _Pipeline:
    def __init__(self, cfg: PipelineConfig, sample: DurationSampler) -> None:
        self.cfg = cfg
        self.env = simpy.Environment()
        self.rng = np.random.default_rng(cfg.seed)
        self.sample = sample
        self.jobs: simpy.Store = simpy.Store(self.env)
        self.ready: list[int] = []  # finished groups, in finishing order
        self.left: dict[int, int] = {}  # group -> trajectories still running
        self.group_epoch: dict[int, int] = {}
        self.outstanding = 0  # groups started and not yet consumed
        self.version = 0
        self.wv_groups: dict[int, int] = {}
        self.changed = self.env.event()
        self.steps: list[dict[str, Any]] = []

    def _notify(self) -> None:
        self.changed.succeed()
        self.changed = self.env.event()

    def _epoch_groups(self) -> list[tuple[int, int]]:
        per_epoch = (self.cfg.pool // self.cfg.batch) * self.cfg.batch
        return [(e, i) for e in range(self.cfg.epochs) for i in range(per_epoch)]

    def loader(self, start: list[simpy.Event]) -> Generator[simpy.Event, Any, None]:
        """Admit groups while the staleness bound allows; per-epoch loaders wait for the epoch's start."""
        cap = (self.cfg.staleness + 1) * self.cfg.batch
        for gid, (epoch, _) in enumerate(self._epoch_groups()):
            if not self.cfg.cross_epoch:
                yield start[epoch]
            while self.outstanding >= cap:
                yield self.changed
            self.outstanding += 1
            self.group_epoch[gid] = epoch
            self.left[gid] = self.cfg.group
            self.wv_groups[self.version] = self.wv_groups.get(self.version, 0) + 1
            for d in self.sample(self.rng, self.cfg.group):
                yield self.jobs.put((gid, float(d)))

    def worker(self) -> Generator[simpy.Event, Any, None]:
        while True:
            gid, duration = yield self.jobs.get()
            yield self.env.timeout(duration)
            self.left[gid] -= 1
            if self.left[gid] == 0:
                self.ready.append(gid)
                self._notify()

    def trainer(
        self, start: list[simpy.Event], steps_per_epoch: int, total_steps: int
    ) -> Generator[simpy.Event, Any, None]:
        start[0].succeed()
        for s in range(1, total_steps + 1):
            waited_from = self.env.now
            while len(self.ready) < self.cfg.batch:
                yield self.changed
            batch, self.ready = self.ready[: self.cfg.batch], self.ready[self.cfg.batch :]
            wait = self.env.now - waited_from
            yield self.env.timeout(self.cfg.train_step_s)
            self.version += 1
            self.outstanding -= self.cfg.batch
            epochs = [self.group_epoch[g] for g in batch]
            self.steps.append({"step": s, "wait_s": wait, "finished_s": self.env.now, "epoch": max(epochs)})
            if not self.cfg.cross_epoch and s % steps_per_epoch == 0 and s // steps_per_epoch < self.cfg.epochs:
                start[s // steps_per_epoch].succeed()
            self._notify()

    def run(self) -> None:
        steps_per_epoch = self.cfg.pool // self.cfg.batch
        total = steps_per_epoch * self.cfg.epochs
        start = [self.env.event() for _ in range(self.cfg.epochs)]
        for _ in range(self.cfg.workers):
            self.env.process(self.worker())
        self.env.process(self.loader(start))
        done = self.env.process(self.trainer(start, steps_per_epoch, total))
        self.env.run(until=done)


def _boundaries(steps: list[dict[str, Any]], median_interval: float) -> list[dict[str, Any]]:
    out, seen = [], 0
    for s in steps:
        if s["epoch"] > seen:
            seen = s["epoch"]
            out.append(
                {
                    "epoch": s["epoch"],
                    "step": s["step"],
                    "wait_s": round(s["wait_s"], 1),
                    "stall": s["wait_s"] > STALL_FACTOR * median_interval,
                }
            )
    return out


def simulate(cfg: PipelineConfig, sample: DurationSampler) -> PipelineResult:
    cfg.check()
    sim = _Pipeline(cfg, sample)
    sim.run()
    steps = sim.steps
    total = steps[-1]["finished_s"]
    intervals = np.diff([0.0] + [s["finished_s"] for s in steps])
    boundaries = _boundaries(steps, float(np.median(intervals)))
    idle = sum(s["wait_s"] for s in steps)
    versions = range(min(sim.wv_groups), max(sim.wv_groups) + 1)  # inside the run, not after its last admission
    return PipelineResult.from_json(
        {
            "config": vars(cfg),
            "steps": len(steps),
            "total_s": round(total, 1),
            "steps_per_hour": round(3600 * len(steps) / total, 3) if total else None,
            "trainer_idle_fraction": round(idle / total, 4) if total else 0.0,
            "median_step_interval_s": round(float(np.median(intervals)), 1),
            "boundary_stalls": [{"epoch": b["epoch"], "wait_s": b["wait_s"]} for b in boundaries if b["stall"]],
            "boundaries": boundaries,
            "empty_wv": [v for v in versions if v not in sim.wv_groups],
            "trajectories_by_wv": {str(v): n * cfg.group for v, n in sorted(sim.wv_groups.items())},
            "step_log": [
                {**s, "wait_s": round(s["wait_s"], 1), "finished_s": round(s["finished_s"], 1)} for s in steps
            ],
        }
    )

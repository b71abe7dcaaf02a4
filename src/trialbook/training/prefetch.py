"""What cross-epoch prefetch would save on this run: the pipeline simulator (`sim_pipeline`) run twice on the
run's own shape, with the per-epoch loader and with cross-epoch sampling, two passes each (one boundary).

The shape is read from the trained trajectories: B = median tasks per step, G = median trajectories per
(step, task), S = the largest staleness seen (step - 1 - wv), P = tasks of the first pass (at least B),
T = the median step wait (the trainer as the bottleneck between boundaries, as in a healthy async run),
W = B x G x (S + 1) workers (enough to fill the staleness window), durations resampled from the run's own.
It is an estimate from a model of the pipeline, and says so wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trialbook.errors import UserError
from trialbook.result_types import Result
from trialbook.training.load import TrainData
from trialbook.training.sim_pipeline import PipelineConfig, empirical_sampler, simulate


@dataclass(frozen=True, kw_only=True)
class PrefetchEstimate(Result):
    batch: int
    group: int
    staleness: int
    pool: int
    train_step_s: float
    workers: int
    boundary_wait_s: float  # simulated wait of the first step of pass 2, per-epoch loader
    boundary_wait_cross_s: float  # the same step with cross-epoch sampling
    saved_s_per_boundary: float


def run_shape(data: TrainData) -> tuple[int, int, int, int] | None:
    """(B, G, S, P) of the trained trajectories, or None when there are none."""
    d = data.subset((data.step >= 0) & (data.wv >= 0))
    if not d.trajectories:
        return None
    ntask = len(d.task_names)
    cell, inv = np.unique(d.step.astype(np.int64) * ntask + d.task, return_inverse=True)
    per_cell = np.bincount(inv, weights=d.n)
    per_step = np.bincount(np.unique(cell // ntask, return_inverse=True)[1])
    batch = max(1, int(np.median(per_step)))
    group = max(1, int(np.median(per_cell)))
    staleness = max(0, int((d.step - 1 - d.wv).max()))
    first = d.epoch == d.epoch.min()
    pool = max(batch, len(np.unique(d.task[first])))
    return batch, group, staleness, pool


def estimate(data: TrainData, durations: np.ndarray, median_step_s: float, seed: int = 0) -> PrefetchEstimate | None:
    shape = run_shape(data)
    if shape is None or median_step_s <= 0:
        return None
    batch, group, staleness, pool = shape
    try:
        sampler = empirical_sampler(durations)
    except UserError:
        return None
    workers = batch * group * (staleness + 1)
    waits = []
    for cross in (False, True):
        cfg = PipelineConfig(batch, group, staleness, pool, 2, median_step_s, workers, cross, seed)
        res = simulate(cfg, sampler)
        first_of_pass2 = pool // batch + 1
        waits.append(next(s.wait_s for s in res.step_log if s.step == first_of_pass2))
    return PrefetchEstimate(
        batch=batch, group=group, staleness=staleness, pool=pool, train_step_s=round(median_step_s, 1),
        workers=workers, boundary_wait_s=waits[0], boundary_wait_cross_s=waits[1],
        saved_s_per_boundary=round(max(0.0, waits[0] - waits[1]), 1),
    )  # fmt: skip

"""Pipeline stalls read from a training run: empty weight versions and slow optimizer steps.

A step's wait is the wall time from the previous step's finish to its own finish (from its start when
the previous step is not logged), so time spent waiting for a batch counts whether or not the trainer
logged the step as started. A step is slow when its wait exceeds SLOW_FACTOR x the median wait, and
sits on an epoch boundary when it consumed trajectories of a pass no earlier step had consumed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from trialbook.training.load import TrainData

SLOW_FACTOR = 5.0


def empty_weight_versions(wv: np.ndarray) -> list[int]:
    present = np.unique(wv[wv >= 0])
    if not len(present):
        return []
    return [int(v) for v in np.setdiff1d(np.arange(present[0], present[-1] + 1), present)]


def step_waits(steps: list[dict[str, Any]]) -> dict[int, float]:
    waits: dict[int, float] = {}
    prev: dict[str, Any] | None = None
    for s in steps:
        end = s["finished_at"]
        if end is not None:
            if prev is not None and prev["step"] == s["step"] - 1 and prev["finished_at"] is not None:
                waits[s["step"]] = (end - prev["finished_at"]).total_seconds()
            elif s["started_at"] is not None:
                waits[s["step"]] = (end - s["started_at"]).total_seconds()
        prev = s
    return waits


def boundary_steps(data: TrainData) -> set[int]:
    """Steps that consumed the first trajectories of a new pass over the pool."""
    ok = (data.step >= 0) & (data.epoch >= 0)
    if not ok.any():
        return set()
    steps, inv = np.unique(data.step[ok], return_inverse=True)
    max_epoch = np.full(len(steps), -1)
    np.maximum.at(max_epoch, inv, data.epoch[ok])
    before = np.maximum.accumulate(np.r_[max_epoch[0], max_epoch[:-1]])
    return {int(s) for s in steps[1:][max_epoch[1:] > before[1:]]}


def stall_report(data: TrainData, steps: list[dict[str, Any]], gpus: int | None) -> dict[str, Any]:
    waits = step_waits(steps)
    median = float(np.median(list(waits.values()))) if waits else None
    boundaries = boundary_steps(data)
    slow = [
        {"step": s, "wait_s": round(w, 1), "epoch_boundary": s in boundaries}
        for s, w in waits.items()
        if median and w > SLOW_FACTOR * median
    ]
    lost = None
    if gpus is not None and median is not None:
        lost = round(gpus * sum(s["wait_s"] - median for s in slow) / 3600, 2)
    return {
        "empty_wv": empty_weight_versions(data.wv),
        "slow_steps": slow,
        "median_step_s": None if median is None else round(median, 1),
        "lost_gpu_hours": lost,
    }

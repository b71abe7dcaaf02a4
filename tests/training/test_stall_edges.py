"""The stall report's rounding on fractional waits, and the epoch-boundary steps at their edges (step 0,
a row with an epoch but no step, a step with no epoch), every number worked out by hand."""

from __future__ import annotations

import numpy as np

from steplog import timed_steps
from trialbook.training.load import TrainData
from trialbook.training.stalls import boundary_steps, stall_report


def _data(rows: list[tuple[int, int]]) -> TrainData:
    """One trajectory per (step, epoch) row; -1 marks a missing step or epoch, as the loader does."""
    size = len(rows)
    step = np.array([r[0] for r in rows], dtype=np.int64)
    return TrainData(
        n=np.ones(size, dtype=np.int64), task=np.zeros(size, dtype=np.int32), task_names=["o__r-1"],
        repo=np.zeros(size, dtype=np.int32), repo_names=["o/r"], outcome=np.zeros(size, dtype=np.int8),
        graded=np.ones(size, dtype=bool), resolved=np.zeros(size, dtype=bool), partial=np.zeros(size, dtype=bool),
        wins=np.zeros(size), p2p=np.zeros(size, dtype=bool), step=step, wv=np.maximum(step - 1, -1),
        epoch=np.array([r[1] for r in rows], dtype=np.int64),
    )  # fmt: skip


def test_fractional_waits_are_rounded_to_a_tenth_and_lost_hours_to_a_hundredth() -> None:
    # median of the five waits: 2.38 s, shown 2.4; 23.46 > 5 x 2.38, shown 23.5; lost GPU hours:
    # 100 GPUs x (23.5 - 2.38) s / 3600 = 0.58667 -> 0.59 (the shown wait minus the unrounded median)
    report = stall_report(_data([(s, 0) for s in range(1, 6)]), timed_steps([2.34, 2.36, 2.38, 2.42, 23.46]), 100)
    assert report == {
        "empty_wv": [],
        "slow_steps": [{"step": 5, "wait_s": 23.5, "epoch_boundary": False}],
        "median_step_s": 2.4,
        "lost_gpu_hours": 0.59,
    }
    # 0.26 s median (0.3 shown), 1.34 s > 1.3 is slow (1.3 shown); 36 GPUs x (1.3 - 0.26) / 3600 = 0.0104 -> 0.01
    report = stall_report(_data([(1, 0)]), timed_steps([0.25, 0.26, 0.26, 0.27, 1.34]), 36)
    assert report["median_step_s"] == 0.3 and report["lost_gpu_hours"] == 0.01
    assert report["slow_steps"] == [{"step": 5, "wait_s": 1.3, "epoch_boundary": False}]


def test_boundary_steps_at_the_edges() -> None:
    # usable rows (step and epoch known): step 0 epoch 0, 1 -> 1, 3 -> 1, 4 -> 1 and 2, 5 -> 0.
    # Per step the highest epoch: 0 1 1 2 0; the highest before each: - 0 1 1 2. New pass: steps 1 and 4.
    # Step 2 has no epoch and the epoch-5 row no step: both ignored (else nothing after them is new).
    rows = [(0, 0), (1, 1), (-1, 5), (2, -1), (3, 1), (4, 1), (4, 2), (5, 0)]
    assert boundary_steps(_data(rows)) == {1, 4}
    # step 0 counts as the first step: epoch 1 at step 1 is a new pass after it
    assert boundary_steps(_data([(0, 0), (1, 1)])) == {1}
    assert boundary_steps(_data([(1, 1), (0, 0)])) == {1}  # rows in any order: by step, not by row
    assert boundary_steps(_data([(-1, 0), (2, -1)])) == set()  # nothing usable
    # a slow step on the boundary is flagged so
    report = stall_report(_data([(1, 0), (2, 0), (3, 0), (4, 1)]), timed_steps([10, 10, 10, 60]), None)
    assert report["slow_steps"] == [{"step": 4, "wait_s": 60.0, "epoch_boundary": True}]
    assert report["lost_gpu_hours"] is None


def test_lost_gpu_hours_divide_by_3600_exactly() -> None:
    # 1000 GPUs x (139.6 - 10) s = 129600 GPU-seconds = 36.0 GPU-hours (35.99 by 3601, 36.01 by 3599)
    report = stall_report(_data([(1, 0)]), timed_steps([10, 10, 10, 10, 139.6]), 1000)
    assert report["lost_gpu_hours"] == 36.0 and report["median_step_s"] == 10.0


def test_no_logged_steps_give_no_median_and_no_lost_hours() -> None:
    # not a NaN median (np.median of nothing) and not 0.0 lost hours, even with --gpus
    report = stall_report(_data([(1, 0), (3, 0)]), [], 8)
    assert report == {"empty_wv": [1], "slow_steps": [], "median_step_s": None, "lost_gpu_hours": None}

"""Memorisation vs transfer with a CI (issue 48): the difference-in-differences of an encounter row,
k-th % of re-encountered tasks minus the first-encounter % of tasks new at the same weight versions, covers
a planted memorisation effect at ~95% (simulated training runs built as TrainData, no ledger)."""

from __future__ import annotations

import numpy as np

from trialbook.training.encounters import encounter_table
from trialbook.training.load import TrainData

OLD, NEW, ATTEMPTS = 120, 120, 2
GENERAL, MEMO = 0.05, 0.10  # the weights improve by 5 pp everywhere; seeing a task again adds 10 pp


def _run(rng: np.random.Generator) -> TrainData:
    """Old tasks: epoch 0 at wv 0, again in epoch 1 at wv 10; new tasks: first seen in epoch 1 at wv 10."""
    p = rng.beta(1.5, 1.5, OLD + NEW)
    task, epoch, wv, win = [], [], [], []
    for t in range(OLD + NEW):
        visits = [(0, p[t]), (1, p[t] + GENERAL + MEMO)] if t < OLD else [(1, p[t] + GENERAL)]
        for e, q in visits:
            for _ in range(ATTEMPTS):
                task.append(t)
                epoch.append(e)
                wv.append(10 * e)
                win.append(rng.random() < min(q, 1.0))
    size = len(task)
    won = np.array(win)
    return TrainData(
        n=np.ones(size, dtype=np.int64), task=np.array(task, dtype=np.int32),
        task_names=[f"o__r-{t}" for t in range(OLD + NEW)], repo=np.zeros(size, dtype=np.int32),
        repo_names=["o/r"], outcome=np.zeros(size, dtype=np.int8), graded=np.ones(size, dtype=bool),
        resolved=won, partial=np.zeros(size, dtype=bool), wins=won.astype(float), p2p=np.zeros(size, dtype=bool),
        step=np.array(wv, dtype=np.int64), wv=np.array(wv, dtype=np.int64), epoch=np.array(epoch, dtype=np.int64),
    )  # fmt: skip


def _truth() -> float:
    big = np.random.default_rng(0).beta(1.5, 1.5, 400_000)
    return float(np.mean(np.minimum(big + GENERAL + MEMO, 1)) - np.mean(np.minimum(big + GENERAL, 1)))


def test_did_interval_covers_a_planted_memorisation_effect():
    rng = np.random.default_rng(48)
    truth = 100 * _truth()
    reps, hits, naive = 300, 0, []
    for _ in range(reps):
        rows, _ = encounter_table(_run(rng))
        (two,) = rows
        lo, hi = two["did_ci_pp"]
        hits += lo <= truth <= hi
        naive.append(two["diff_pp"])
    assert 0.93 <= hits / reps <= 0.97, hits / reps
    # the same-task gain alone mixes in the general improvement: it is biased by about +5 pp
    assert np.mean(naive) - truth > 3

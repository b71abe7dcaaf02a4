"""Paired comparison of two runs' task scores (Miller 2024, "Adding Error Bars to Evals").

The unit is the task: d_i = s_cand,i - s_base,i over tasks graded in both runs; the CI is the adjusted
interval of `stats.kernel.diff_interval` at every n (attempts of a task are one cluster, never
independent samples).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from trialbook.stats import dist
from trialbook.stats.kernel import clip_ci, diff_interval, pseudo_scale, win_loss


@dataclass(frozen=True)
class Paired:
    n: int
    base_mean: float
    cand_mean: float
    diff: float
    se: float
    ci: tuple[float, float]
    level: float
    p_value: float
    wins: int
    losses: int
    ties: int
    sign_p: float
    correlation: float | None
    few_tasks: bool = False  # fewer than kernel.FEW_TASKS tasks (labelled; the method is the same)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact binomial test of wins vs losses (ties dropped)."""
    return dist.sign_test_p(wins, losses)


def correlation(base: np.ndarray, cand: np.ndarray) -> float | None:
    if base.size < 3 or base.std() == 0 or cand.std() == 0:
        return None
    return float(np.corrcoef(base, cand)[0, 1])


def paired(
    base: np.ndarray, cand: np.ndarray, level: float = 0.95,
    base_attempts: np.ndarray | None = None, cand_attempts: np.ndarray | None = None,
) -> Paired:  # fmt: skip
    """Compare aligned task-score arrays (fractions in [0, 1]); ties are differences within kernel.TIE. The
    attempt counts (graded trials per task) set the interval's pseudo-tasks (`kernel.pseudo_scale`)."""
    d = cand - base
    iv = diff_interval(d, level, pseudo_scale(base_attempts, cand_attempts))
    lo, hi, few = clip_ci(iv.lo, iv.hi, d.size)
    won, lost = win_loss(d)
    wins, losses = int(won.sum()), int(lost.sum())
    return Paired(
        n=int(d.size),
        base_mean=float(base.mean()),
        cand_mean=float(cand.mean()),
        diff=iv.mean,
        se=iv.se,
        ci=(lo, hi),
        level=level,
        p_value=iv.p,
        wins=wins,
        losses=losses,
        ties=int(d.size - wins - losses),
        sign_p=sign_test(wins, losses),
        correlation=correlation(base, cand),
        few_tasks=few,
    )


def bootstrap_ci(
    d: np.ndarray, level: float = 0.95, n_resamples: int = 10_000, seed: int = 0, chunk: int = 2_000
) -> tuple[float, float]:
    """Percentile task bootstrap CI of mean(d), vectorised in chunks of resamples."""
    rng = np.random.default_rng(seed)
    n = d.size
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = d[idx].mean(axis=1)
    alpha = 1 - level
    lo, hi = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)

"""An independent scipy implementation of the small-sample interval (Agresti & Min 2005, generalised to
task means; stats.kernel.diff_interval) that the tests check the kernel's against."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def adjusted(d, level: float = 0.95) -> tuple[float, float, float, float]:
    """(lo, hi, se, p), unclipped: 1/2 pseudo-task at +1, 1/2 at -1, 1 at 0; t on 2n df."""
    x = np.r_[np.asarray(d, dtype=float), 1.0, -1.0, 0.0]
    w = np.r_[np.ones(len(d)), 0.5, 0.5, 1.0]
    total = w.sum()
    m = float(np.sum(w * x) / total)
    se = math.sqrt(float(np.sum(w * (x - m) ** 2) / total) / total)
    q = stats.t.ppf(0.5 + level / 2, 2 * len(d))
    return m - q * se, m + q * se, se, float(2 * stats.t.sf(abs(m) / se, 2 * len(d)))


def adjusted_pp(d, level: float = 0.95) -> list[float]:
    """The interval in points, clipped to [-100, 100] and rounded as `compare` prints it."""
    lo, hi, _, _ = adjusted(d, level)
    return [round(100 * max(-1.0, lo), 4), round(100 * min(1.0, hi), 4)]

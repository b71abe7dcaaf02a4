"""An independent scipy implementation of the paired interval at every n (Agresti & Min 2005, generalised to
task means; stats.kernel.diff_interval) that the tests check the kernel's against."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def adjusted(d, level: float = 0.95, scale2: float = 1.0) -> tuple[float, float, float, float]:
    """(lo, hi, se, p), unclipped: 1/2 pseudo-task at +c, 1/2 at -c, 1 at 0 (c^2 = scale2); t on 2n df."""
    c = math.sqrt(scale2)
    x = np.r_[np.asarray(d, dtype=float), c, -c, 0.0]
    w = np.r_[np.ones(len(d)), 0.5, 0.5, 1.0]
    total = w.sum()
    m = float(np.sum(w * x) / total)
    se = math.sqrt(float(np.sum(w * (x - m) ** 2) / total) / total)
    q = stats.t.ppf(0.5 + level / 2, 2 * len(d))
    return m - q * se, m + q * se, se, float(2 * stats.t.sf(abs(m) / se, 2 * len(d)))


def adjusted_pp(d, level: float = 0.95, scale2: float = 1.0) -> list[float]:
    """The interval in points, clipped to [-100, 100] and rounded as `compare` prints it."""
    lo, hi, _, _ = adjusted(d, level, scale2)
    return [round(100 * max(-1.0, lo), 4), round(100 * min(1.0, hi), 4)]

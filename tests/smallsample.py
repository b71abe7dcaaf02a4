"""An independent scipy implementation of the paired interval at every n (Agresti & Min 2005, generalised to
task means, its ends made monotone; stats.kernel.diff_interval) that the tests check the kernel's against:
the kernel finds the best cut in closed form, this by scipy's numerical search."""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, stats


def _plain(d: np.ndarray, scale2: float, q: float) -> tuple[float, float, float]:
    """(lower end, mean, se) of the augmented sample: 1/2 pseudo-task at +c, 1/2 at -c, 1 at 0 (c^2 = scale2)."""
    c = math.sqrt(scale2)
    x = np.r_[d, c, -c, 0.0]
    w = np.r_[np.ones(len(d)), 0.5, 0.5, 1.0]
    total = w.sum()
    m = float(np.sum(w * x) / total)
    se = math.sqrt(float(np.sum(w * (x - m) ** 2) / total) / total)
    return m - q * se, m, se


def _best_cap(d: np.ndarray, f) -> float:
    """max over t of f(min(d, t)), by scipy's bounded scalar search on each stretch between sorted values
    (and below the lowest), plus the stretch ends."""
    s = np.sort(d)
    best = max(f(np.minimum(d, t)) for t in s)
    for a, b in zip(np.r_[s[0] - 3.0, s[:-1]], s, strict=True):
        if b - a > 1e-12:
            r = optimize.minimize_scalar(lambda t: -f(np.minimum(d, t)), bounds=(a, b), method="bounded",
                                         options={"xatol": 1e-13})  # fmt: skip
            best = max(best, -r.fun)
    return best


def adjusted(d, level: float = 0.95, scale2: float = 1.0) -> tuple[float, float, float, float]:
    """(lo, hi, se, p), unclipped: the augmented sample's t interval on 2n df, each end made monotone (the
    largest lower end over every d' <= d, the smallest upper end over every d' >= d); p from the largest t
    statistic over the same d'. se is the augmented sample's of d itself."""
    d = np.asarray(d, dtype=float)
    df = 2 * len(d)
    q = stats.t.ppf(0.5 + level / 2, df)
    lo = _best_cap(d, lambda x: _plain(x, scale2, q)[0])
    hi = -_best_cap(-d, lambda x: _plain(x, scale2, q)[0])
    z = max(_best_cap(d, lambda x: _plain(x, scale2, q)[1] / _plain(x, scale2, q)[2]),
            _best_cap(-d, lambda x: _plain(x, scale2, q)[1] / _plain(x, scale2, q)[2]))  # fmt: skip
    return lo, hi, _plain(d, scale2, q)[2], float(2 * stats.t.sf(z, df))


def adjusted_pp(d, level: float = 0.95, scale2: float = 1.0) -> list[float]:
    """The interval in points, clipped to [-100, 100] and rounded as `compare` prints it."""
    lo, hi, _, _ = adjusted(d, level, scale2)
    return [round(100 * max(-1.0, lo), 4), round(100 * min(1.0, hi), 4)]

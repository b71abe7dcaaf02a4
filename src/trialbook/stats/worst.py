"""The ends of the interval over every assignment of the ungraded trials (compare's crossed worst cases).

Each ungraded trial's real outcome is 0 or 1, so task i's difference d_i can be anything its trials allow,
between dmin_i (the baseline's ungraded as successes, the candidate's as failures) and dmax_i (the reverse).
The interval's lower end (stats.kernel.diff_interval), lo(d) = S1/N - (q/N) sqrt(S2 + c^2 - S1^2/N) with
S1 = sum d, S2 = sum d^2, N = n + 2, is a linear function minus a norm: concave in d. Its minimum over the box
prod [dmin_i, dmax_i] is therefore at a vertex (each task at dmin_i or dmax_i), and every vertex is an
assignment. `lowest_lower_end` finds that minimum:

- **exactly**, by enumerating the 2^m vertices, when m <= EXACT_TASKS tasks have a range;
- above, as a **bound** that no assignment's lower end goes below: for a given S1 the largest S2 over the
  vertices is at most the fractional knapsack's (tasks sorted by their range's midpoint, the ratio of what
  they add to S2 and to S1), a concave piecewise-linear function of S1; lo is decreasing in S2 and convex in
  (S1, S2), so its minimum along each piece is found by ternary search. The best threshold vertex (a real
  assignment) is computed too: the exact minimum lies between the two (`Extreme.gap`).

The upper end's maximum is the same problem for -d (hi(d) = -lo(-d)).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trialbook.stats import dist

EXACT_TASKS = 16  # up to this many tasks with ungraded trials, every vertex is enumerated


@dataclass(frozen=True)
class Extreme:
    """`value`: the extreme end (a fraction), exact or a bound no assignment passes; `gap`: how far the
    best real assignment found is from `value` (0 when exact)."""

    value: float
    gap: float


def _lo(s1: np.ndarray, s2: np.ndarray, total: float, scale2: float, q: float) -> np.ndarray:
    m = s1 / total
    var = np.maximum((s2 + scale2) / total - m * m, 0.0)
    return m - q * np.sqrt(var / total)


def lowest_lower_end(dmin: np.ndarray, dmax: np.ndarray, scale2: float, level: float) -> Extreme:
    """The smallest lower end of the interval (diff_interval at `level`, pseudo-tasks at +-sqrt(scale2))
    over every d with dmin <= d <= dmax, d_i at either end (module docstring)."""
    n = dmin.size
    total = n + 2.0
    q = dist.t_ppf(0.5 + level / 2, 2 * n)
    w = dmax - dmin
    free = w > 1e-12
    a1 = float(dmin.sum())
    a2 = float(dmin @ dmin)
    wf = w[free]
    vf = dmax[free] ** 2 - dmin[free] ** 2  # what moving task i to dmax adds to S2
    m = int(free.sum())
    if m <= EXACT_TASKS:
        bits = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1
        vals = _lo(a1 + bits @ wf, a2 + bits @ vf, total, scale2, q)
        return Extreme(float(vals.min()), 0.0)
    order = np.argsort(-(vf / wf), kind="stable")  # by the range's midpoint, highest first
    s1 = a1 + np.concatenate([[0.0], np.cumsum(wf[order])])
    s2 = a2 + np.concatenate([[0.0], np.cumsum(vf[order])])
    vertices = _lo(s1, s2, total, scale2, q)  # the threshold vertices: real assignments
    # the minimum of lo along each piece of the knapsack's upper hull (convex along a segment)
    a, b = np.zeros(m), np.ones(m)
    for _ in range(80):
        x1, x2 = a + (b - a) / 3, b - (b - a) / 3
        f1 = _lo(s1[:-1] + x1 * (s1[1:] - s1[:-1]), s2[:-1] + x1 * (s2[1:] - s2[:-1]), total, scale2, q)
        f2 = _lo(s1[:-1] + x2 * (s1[1:] - s1[:-1]), s2[:-1] + x2 * (s2[1:] - s2[:-1]), total, scale2, q)
        left = f1 < f2
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
    x = (a + b) / 2
    inner = _lo(s1[:-1] + x * (s1[1:] - s1[:-1]), s2[:-1] + x * (s2[1:] - s2[:-1]), total, scale2, q)
    best = float(vertices.min())
    bound = min(best, float(inner.min()) - 1e-12)
    return Extreme(bound, best - bound if best - bound > 1e-9 else 0.0)


def highest_upper_end(dmin: np.ndarray, dmax: np.ndarray, scale2: float, level: float) -> Extreme:
    """The largest upper end over the same assignments: hi(d) = -lo(-d)."""
    low = lowest_lower_end(-dmax, -dmin, scale2, level)
    return Extreme(-low.value, low.gap)

"""The interval arithmetic every report shares (`compare`, `plan`, `train report`), in one place.

- `diff_interval` (and its tuple form `t_interval`): the interval for the mean of paired task
  differences d_i, the unit being the task (Miller 2024, "Adding Error Bars to Evals", sec. 2-3:
  attempts of a task are one cluster, never independent samples).
  * From FEW_TASKS tasks on, the one-sample t interval, equal to
    scipy.stats.ttest_rel(...).confidence_interval().
  * Below FEW_TASKS tasks, or where every difference is the same value (the t interval's variance
    is 0 and it collapses to a point), the Agresti-Min adjusted interval for matched pairs (Agresti &
    Min 2005, "Simple improved confidence intervals for comparing matched proportions", Stat Med
    24:729-740) generalised to task means in [0, 1]: two pseudo-tasks are added, weight 1/2 at
    d = +1, 1/2 at d = -1 and 1 at d = 0 (for binary tasks: 1/2 added to each cell of the 2x2
    table); mean and variance are those of the augmented sample (N = n + 2), SE = sqrt(var / N), and
    the quantile is t on 2n degrees of freedom (SMALL_DF). The paper's z gives mean coverage 94.9% but
    claims from 3 of 3 tasks won; t on n + 1 df (the first choice here) was conservative, 98.4% at
    n = 5. With 2n df the mean exact coverage over 45 binary designs is 96.8 / 96.5 / 96.1 / 95.5% at
    n = 5 / 6 / 10 / 20 (tests/stats/test_small_sample_coverage.py enumerates every outcome; higher
    where tasks take partial scores, whose pseudo-tasks at +-1 add more variance than they have).
    Never a point; claims monotone in wins and losses (tests/stats/test_kernel_edges.py).
- `cluster_ratio_ci`: a ratio sum(y)/sum(n) per group with the cluster-robust (CR1) standard error,
  clusters being tasks, and a t quantile on C-1 degrees of freedom (Cameron & Miller 2015, "A
  Practitioner's Guide to Cluster-Robust Inference", sec. II.B and VI.B); the SE equals statsmodels'
  OLS-on-a-constant cluster SE of a mean, weighted by n.

Quantiles come from `stats.dist` (standard library only: scipy's import alone would cost more than
the < 1 s `compare` budget).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trialbook.stats import dist

TIE = 1e-9  # task-score differences within this of 0 are ties (float sums of partial rewards)
FEW_TASKS = 30  # below this many paired tasks, CIs are clipped to the possible range and labelled
SMALL_DF = 2  # the small-sample interval's t quantile has SMALL_DF * n degrees of freedom (module docstring)


def win_loss(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of wins (d > TIE) and losses (d < -TIE); the rest are ties."""
    return d > TIE, d < -TIE


def clip_ci(lo: float, hi: float, n: int) -> tuple[float, float, bool]:
    """(lo, hi, few): a difference of task means lies in [-1, 1], so the interval is clipped there (nan
    stays nan); `few` flags fewer than FEW_TASKS tasks, where the small-sample interval is used."""
    few = n < FEW_TASKS
    if np.isfinite(lo):  # a bound past the possible range says nothing more than the range's end
        lo, hi = max(lo, -1.0), min(hi, 1.0)
    return lo, hi, few


@dataclass(frozen=True)
class Interval:
    """The interval for the mean of task differences: `se` is the SE the interval used (the augmented
    sample's below FEW_TASKS), `p` the two-sided p of mean 0 under the same method; `adjusted` says
    the small-sample (Agresti-Min) form was used."""

    mean: float
    se: float
    lo: float
    hi: float
    p: float
    adjusted: bool


def _adjusted(d: np.ndarray, level: float) -> Interval:
    n = d.size
    total = n + 2.0  # + 1/2 pseudo-task at +1, 1/2 at -1, 1 at 0
    m = float(d.sum()) / total
    var = max((float(d @ d) + 1.0) / total - m * m, 0.0)
    se = float(np.sqrt(var / total))
    df = SMALL_DF * n
    half = dist.t_ppf(0.5 + level / 2, df) * se
    p = dist.t_two_sided_p(m / se, df) if se > 0 else 1.0
    return Interval(float(d.mean()), se, m - half, m + half, p, True)


def diff_interval(d: np.ndarray, level: float = 0.95) -> Interval:
    """The interval for the mean of d (module docstring); se, lo, hi, p are nan when n < 2 (mean nan when n = 0)."""
    n = d.size
    mean = float(d.mean()) if n else float("nan")
    nan = float("nan")
    if n < 2:
        return Interval(mean, nan, nan, nan, nan, False)
    se = float(d.std(ddof=1) / np.sqrt(n))
    if n < FEW_TASKS or se == 0:
        return _adjusted(d, level)
    half = dist.t_ppf(0.5 + level / 2, n - 1) * se
    return Interval(mean, se, mean - half, mean + half, dist.t_two_sided_p(mean / se, n - 1), False)


def did_interval(
    diff: float, se_a: float, n_a: int, se_b: float, n_b: int, level: float = 0.95
) -> tuple[float, float, float]:
    """(lo, hi, df): the interval for a difference of two independent means' estimates, `diff` = a - b, e.g.
    in-pool gain minus out-of-pool gain (difference in differences). SE = sqrt(se_a^2 + se_b^2), t quantile on
    the Welch-Satterthwaite df (Welch 1947, Biometrika 34:28-35), rounded down; clipped to [-2, 2] (a
    difference of two differences of task means). nan where either SE is undefined."""
    nan = float("nan")
    if not (np.isfinite(se_a) and np.isfinite(se_b)) or n_a < 2 or n_b < 2:
        return nan, nan, nan
    se = float(np.hypot(se_a, se_b))
    va, vb = se_a**2, se_b**2
    den = va * va / (n_a - 1) + vb * vb / (n_b - 1)
    df = (va + vb) ** 2 / den if den > 0 else float(n_a + n_b - 2)
    half = dist.t_ppf(0.5 + level / 2, max(1, int(df))) * se
    return max(-2.0, diff - half), min(2.0, diff + half), df


def t_interval(d: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """(mean, se, lo, hi) of `diff_interval`."""
    r = diff_interval(d, level)
    return r.mean, r.se, r.lo, r.hi


def cluster_ratio_ci(
    y: np.ndarray, n: np.ndarray, group: np.ndarray, n_groups: int, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per group g: p = sum y / sum n over its clusters, and the CR1 t interval (p, lo, hi).

    y (successes) and n (trials) are per-cluster sums, `group` each cluster's group index. With C
    clusters of positive n in the group and N = sum n: Var(p) = C/(C-1) * sum_i (y_i - p n_i)^2 / N^2,
    and the interval is p -/+ t_{C-1} * SE. lo and hi are nan where C < 2; p is nan where N = 0.
    """
    ys = np.bincount(group, weights=y, minlength=n_groups)
    ns = np.bincount(group, weights=n, minlength=n_groups)
    clusters = np.bincount(group, weights=n > 0, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = ys / ns
        e2 = np.bincount(group, weights=(y - p[group] * n) ** 2, minlength=n_groups)
        se = np.sqrt(clusters / (clusters - 1) * e2) / ns
    lo = np.full(n_groups, np.nan)
    hi = np.full(n_groups, np.nan)
    for g in np.flatnonzero(clusters >= 2):
        half = dist.t_ppf(0.5 + level / 2, int(clusters[g]) - 1) * se[g]
        lo[g], hi[g] = p[g] - half, p[g] + half
    return p, lo, hi

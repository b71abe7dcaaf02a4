"""The interval arithmetic every report shares (`compare`, `plan`, `train report`), in one place.

- `t_interval`: the one-sample t interval for the mean of paired differences d_i, the unit being
  the task (Miller 2024, "Adding Error Bars to Evals", sec. 2-3: attempts of a task are one cluster,
  never independent samples). Equal to scipy.stats.ttest_rel(...).confidence_interval(), except
  where every difference is the same non-zero value: the sample variance is 0 and the t interval
  collapses to a point with p = 0 whatever n is. There the interval and p are the exact sign test's
  with its order-statistic CI of the median (Conover 1999, "Practical Nonparametric Statistics",
  ch. 3): the point when n tasks all one way can reject at the level, else the whole range
  [-1, 1] of a difference of fractions; p = 2 * 0.5^n.
- `cluster_ratio_ci`: a ratio sum(y)/sum(n) per group with the cluster-robust (CR1) standard error,
  clusters being tasks, and a t quantile on C-1 degrees of freedom (Cameron & Miller 2015, "A
  Practitioner's Guide to Cluster-Robust Inference", sec. II.B and VI.B); the SE equals statsmodels'
  OLS-on-a-constant cluster SE of a mean, weighted by n.

Quantiles come from `stats.dist` (standard library only: scipy's import alone would cost more than
the < 1 s `compare` budget).
"""

from __future__ import annotations

import numpy as np

from trialbook.stats import dist

TIE = 1e-9  # task-score differences within this of 0 are ties (float sums of partial rewards)
FEW_TASKS = 30  # below this many paired tasks, CIs are clipped to the possible range and labelled


def win_loss(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of wins (d > TIE) and losses (d < -TIE); the rest are ties."""
    return d > TIE, d < -TIE


def clip_ci(lo: float, hi: float, n: int) -> tuple[float, float, bool]:
    """(lo, hi, few): a difference of task means lies in [-1, 1]; with fewer than FEW_TASKS tasks the
    t interval often reaches past it, so it is clipped there and flagged `few` (nan stays nan)."""
    few = n < FEW_TASKS
    if few and np.isfinite(lo):
        lo, hi = max(lo, -1.0), min(hi, 1.0)
    return lo, hi, few


def t_interval(d: np.ndarray, level: float = 0.95) -> tuple[float, float, float, float]:
    """(mean, se, lo, hi) of the t interval for the mean of d; se, lo, hi are nan when n < 2 (mean nan when n = 0).
    Every difference the same non-zero value: the sign test's interval (module docstring)."""
    n = d.size
    mean = float(d.mean()) if n else float("nan")
    if n < 2:
        return mean, float("nan"), float("nan"), float("nan")
    se = float(d.std(ddof=1) / np.sqrt(n))
    if se == 0 and mean != 0 and dist.sign_test_p(n, 0) > 1 - level:
        return mean, se, -1.0, 1.0  # too few tasks for n-of-n to be significant: nothing is excluded
    half = dist.t_ppf(0.5 + level / 2, n - 1) * se
    return mean, se, mean - half, mean + half


def t_p_value(mean: float, se: float, n: int) -> float:
    """Two-sided p of the paired t test (1.0 when every difference is 0; the sign test's 2 * 0.5^n when
    every difference is the same non-zero value, where t would say 0 for any n)."""
    if n < 2 or not np.isfinite(se):
        return float("nan")
    if se == 0:
        return 1.0 if mean == 0 else dist.sign_test_p(n, 0)
    return dist.t_two_sided_p(mean / se, n - 1)


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

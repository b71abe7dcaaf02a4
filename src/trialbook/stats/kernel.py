"""The interval arithmetic every report shares (`compare`, `plan`, `train report`), in one place.

- `diff_interval` (and its tuple form `t_interval`): the interval for the mean of paired task
  differences d_i, the unit being the task (Miller 2024, "Adding Error Bars to Evals", sec. 2-3:
  attempts of a task are one cluster, never independent samples). One method at every n (there is no
  switch at 30 tasks): the Agresti-Min adjusted interval for matched pairs (Agresti & Min 2005,
  "Simple improved confidence intervals for comparing matched proportions", Stat Med 24:729-740)
  generalised to task means: two pseudo-tasks are added, weight 1/2 at d = +c, 1/2 at d = -c and 1 at
  d = 0; mean and variance are those of the augmented sample (N = n + 2), SE = sqrt(var / N), and the
  quantile is t on 2n degrees of freedom (SMALL_DF). For one-attempt tasks c = 1 (1/2 added to each
  cell of the 2x2 table, the paper's interval); for task means over K >= 2 attempts c^2 = 1/(2K)
  (`pseudo_scale`), chosen as Agresti and Min chose theirs, by coverage: on a grid of 56 designs declared
  before (c^2 = 1/K, the variance of a task at p = 1/2, covered 99-100% at 5 tasks of 2-8 attempts) and
  checked on 40 designs drawn after. c depends on the attempt counts only, never on the outcomes.
  Each end is made monotone in the evidence (`lower_ends`): the lower end is the largest plain lower end
  over every d' <= d, the upper end the smallest upper end over every d' >= d, so raising a task's score
  never lowers either end, a claim is never lost by more evidence for it, and the crossed worst cases of
  ungraded trials are the two extreme assignments. The variance is never 0, so tied differences
  (exactly or to the last float bit: 30 tasks all +1/3) never give a point interval. As n grows the
  pseudo-tasks' weight vanishes and the interval tends to the t interval (scipy's ttest_rel). Coverage
  by simulation: benchmarks/bench_interval_coverage.py, docs/statistics.md.
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
FEW_TASKS = 30  # below this many paired tasks an interval is labelled `few tasks` (the method is the same)
SMALL_DF = 2  # the interval's t quantile has SMALL_DF * n degrees of freedom (module docstring)


def win_loss(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masks of wins (d > TIE) and losses (d < -TIE); the rest are ties."""
    return d > TIE, d < -TIE


def clip_ci(lo: float, hi: float, n: int) -> tuple[float, float, bool]:
    """(lo, hi, few): a difference of task means lies in [-1, 1], so the interval is clipped there (nan
    stays nan); `few` flags fewer than FEW_TASKS tasks."""
    few = n < FEW_TASKS
    if np.isfinite(lo):  # a bound past the possible range says nothing more than the range's end
        lo, hi = max(lo, -1.0), min(hi, 1.0)
    return lo, hi, few


@dataclass(frozen=True)
class Interval:
    """The interval for the mean of task differences: `mean` the plain mean of d, `se` the augmented
    sample's SE (of d itself; the monotone ends may come from a capped d'), `p` the two-sided p of mean 0
    under the same method (p < alpha exactly when the 1 - alpha interval excludes 0); `adjusted` is always
    True (kept for the JSON's readers)."""

    mean: float
    se: float
    lo: float
    hi: float
    p: float
    adjusted: bool


def pseudo_scale(base_attempts: np.ndarray | None = None, cand_attempts: np.ndarray | None = None) -> float:
    """c^2 of the pseudo-tasks (module docstring): the mean over tasks of (g(K_base) + g(K_cand)) / 2, K a
    task's graded attempts in each run, g(1) = 1 (the paper's c = 1) and g(K) = 1/(2K) for K >= 2; 1 (one
    attempt each) when the counts are not given."""
    if base_attempts is None or cand_attempts is None or base_attempts.size == 0:
        return 1.0
    return float(np.mean(0.5 * attempt_scale(base_attempts) + 0.5 * attempt_scale(cand_attempts)))


def attempt_scale(k: np.ndarray | float) -> np.ndarray:
    """g(K): c^2 for tasks of K attempts (`pseudo_scale`); K below 1 (no graded attempt) counts as 1."""
    k = np.asarray(k, dtype=float)
    return np.where(k < 1.5, 1.0, 0.5 / np.maximum(k, 1.0))


def _lower(s1: np.ndarray, s2: np.ndarray, total: float, q: float) -> np.ndarray:
    """The augmented sample's lower end, S1 the sum of d, s2 the sum of d^2 plus c^2, N = total."""
    m = s1 / total
    return m - q * np.sqrt(np.maximum(s2 / total - m * m, 0.0) / total)


def _capped(d: np.ndarray, scale2: float) -> tuple[np.ndarray, ...]:
    """The stretches of t for min(d, t), along d's last axis: in stretch k the k lowest values stay and n - k
    are at t, t in [start_k, end_k]; (a, b, r, start, end) with a, b the kept values' sum and sum of squares
    plus c^2."""
    s = np.sort(d, axis=-1)
    n = s.shape[-1]
    zero = np.zeros((*s.shape[:-1], 1))
    a = np.concatenate([zero, np.cumsum(s, axis=-1)[..., :-1]], axis=-1)
    b = np.concatenate([zero, np.cumsum(s * s, axis=-1)[..., :-1]], axis=-1) + scale2
    start = np.concatenate([zero - np.inf, s[..., :-1]], axis=-1)
    return a, b, n - np.arange(n, dtype=float), start, s


def _best_lower(stretches: tuple[np.ndarray, ...], q: float) -> np.ndarray:
    """The largest plain lower end over the stretches (`lower_ends`): at each stretch's end and where the
    derivative in t vanishes, the roots of a quadratic, clipped to the stretch."""
    a, b, r, start, end = stretches
    total = end.shape[-1] + 2.0
    qq = q * q
    qa = (total - r) * (qq * (total - r) - total * r)
    qb = 2 * a * (total * r - qq * (total - r))
    qc = qq * a * a - total * total * b + total * a * a
    root = np.sqrt(np.maximum(qb * qb - 4 * qa * qc, 0.0))
    best: np.ndarray = _lower(a + r * end, b + r * end * end, total, q).max(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in ((-qb + root) / (2 * qa), (-qb - root) / (2 * qa), -qc / qb):
            t = np.clip(np.where(np.isfinite(t), t, end), start, end)
            best = np.maximum(best, _lower(a + r * t, b + r * t * t, total, q).max(axis=-1))
    return best


def _best_t(stretches: tuple[np.ndarray, ...]) -> float:
    """The largest t statistic of the augmented mean over the same d' (`diff_interval`'s p): per stretch z(t)
    is stationary at t = b / a."""
    a, b, r, start, end = stretches
    total = end.shape[-1] + 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.clip(np.where(a != 0, b / a, end), start, end)
    best = -np.inf
    for t in (end, inner):
        s1, s2 = a + r * t, b + r * t * t
        best = max(best, float((s1 * np.sqrt(total) / np.sqrt(np.maximum(total * s2 - s1 * s1, 1e-300))).max()))
    return best


def lower_ends(d: np.ndarray, scale2: float, q: float) -> np.ndarray:
    """The interval's lower end made monotone, for each row of d (the last axis holds a row's task
    differences): the largest lower end of the augmented sample over every d' <= d (docs/statistics.md).
    Raising d_j lowers the plain end only when d_j is past a common cut t, so the largest is at
    d' = min(d, t) for one t, searched exactly stretch by stretch between the sorted values."""
    return _best_lower(_capped(np.asarray(d, dtype=float), scale2), q)


def diff_interval(d: np.ndarray, level: float = 0.95, scale2: float = 1.0) -> Interval:
    """The interval for the mean of d (module docstring), pseudo-tasks at +-sqrt(scale2), its ends made
    monotone in d (`lower_ends`); se, lo, hi, p are nan when n < 2 (mean nan when n = 0)."""
    n = d.size
    mean = float(d.mean()) if n else float("nan")
    nan = float("nan")
    if n < 2:
        return Interval(mean, nan, nan, nan, nan, False)
    d = np.asarray(d, dtype=float)
    total = n + 2.0  # + 1/2 pseudo-task at +c, 1/2 at -c, 1 at 0
    m = float(d.sum()) / total
    se = float(np.sqrt(max((float(d @ d) + scale2) / total - m * m, 0.0) / total))
    df = SMALL_DF * n
    q = dist.t_ppf(0.5 + level / 2, df)
    up, down = _capped(d, scale2), _capped(-d, scale2)  # the upper end is -(the lower end of -d)
    lo, hi = float(_best_lower(up, q)), -float(_best_lower(down, q))
    p = dist.t_two_sided_p(max(_best_t(up), _best_t(down)), df)
    return Interval(mean, se, lo, hi, p, True)


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


def pooled_interval(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(diff, lo, hi): mean(a) - mean(b) for two disjoint sets of tasks, with Student's pooled-variance t
    interval on n_a + n_b - 2 df (Student 1908; Welch 1938 on when pooling is right: equal variances). Used
    where the two sets are tasks of one pool at the same weights and attempts (`train report`'s k-th minus
    new tasks), so their variances are equal by design and the larger set's carries the smaller's: with
    3 new tasks Welch's interval covered 84-91%, this one 93-96% (docs/statistics.md). nan below 2 tasks
    a side."""
    na, nb = a.size, b.size
    nan = float("nan")
    if na < 2 or nb < 2:
        return (float(a.mean() - b.mean()) if na and nb else nan), nan, nan
    diff = float(a.mean() - b.mean())
    sp2 = ((na - 1) * float(a.var(ddof=1)) + (nb - 1) * float(b.var(ddof=1))) / (na + nb - 2)
    half = dist.t_ppf(0.5 + level / 2, na + nb - 2) * float(np.sqrt(sp2 * (1 / na + 1 / nb)))
    return diff, diff - half, diff + half


def t_interval(d: np.ndarray, level: float = 0.95, scale2: float = 1.0) -> tuple[float, float, float, float]:
    """(mean, se, lo, hi) of `diff_interval`."""
    r = diff_interval(d, level, scale2)
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

"""The few distribution functions the statistics need (`compare`, `plan`, `train report`), in the standard library.

Why not scipy: importing scipy.special/scipy.stats costs 0.3-1 s, more than the whole compare
budget (< 1 s end to end from the CLI). These are closed forms, checked against scipy by the
stats tests (test_distribution_functions_match_scipy, test_t_ppf_large_df_matches_scipy):
- Student t CDF for integer df: the finite series of Abramowitz & Stegun 26.7.3-4; quantile by
  safeguarded Newton steps on it, or for df > 1000 (where the series costs O(df) per step) the
  Cornish-Fisher expansion A&S 26.7.5, whose error there is below 1e-13.
- Normal: statistics.NormalDist.
- Two-sided sign test at p = 1/2: the exact integer binomial tail (scipy.stats.binomtest's value) up
  to EXACT_SIGN_N untied tasks; above, the same tail summed in floating point from its largest term
  down (terms C(n, i) / 2^n by the ratio i / (n - i + 1), the first by lgamma), stopping once a term is
  below 1e-17 of the sum: O(sqrt(n)) terms instead of the exact sum's O(n) big-integer terms of
  O(n) digits (100k untied tasks took 60 s). Relative error against scipy below 1e-9
  (tests/stats/test_sign_test_scale.py).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from statistics import NormalDist

_N = NormalDist()


def norm_cdf(x: float) -> float:
    return _N.cdf(x)


def norm_ppf(p: float) -> float:
    return _N.inv_cdf(p)


def _t_central(t: float, df: int) -> float:
    """A(t|df) = P(-t < T < t) signed (odd in t), via A&S 26.7.3 (odd df) and 26.7.4 (even df)."""
    theta = math.atan(t / math.sqrt(df))
    s, c = math.sin(theta), math.cos(theta)
    c2 = c * c
    term = total = 1.0
    if df % 2 == 0:
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    for j in range(1, (df - 1) // 2):
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2 / math.pi * (theta + s * c * total)


def t_cdf(t: float, df: int) -> float:
    if df < 1:
        raise ValueError("df must be a positive integer")
    return 0.5 + 0.5 * _t_central(t, df)


def t_two_sided_p(t: float, df: int) -> float:
    """P(|T| >= |t|)."""
    return max(0.0, 1.0 - _t_central(abs(t), df))


def t_pdf(t: float, df: int) -> float:
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1) / 2 * math.log1p(t * t / df))


_LARGE_DF = 1000


def _t_ppf_expansion(p: float, df: int) -> float:
    """A&S 26.7.5: t_p = x + g1/df + g2/df^2 + g3/df^3 + g4/df^4 around the normal quantile x."""
    x = norm_ppf(p)
    x2 = x * x
    g1 = x * (x2 + 1) / 4
    g2 = x * ((5 * x2 + 16) * x2 + 3) / 96
    g3 = x * (((3 * x2 + 19) * x2 + 17) * x2 - 15) / 384
    g4 = x * ((((79 * x2 + 776) * x2 + 1482) * x2 - 1920) * x2 - 945) / 92160
    return x + (g1 + (g2 + (g3 + g4 / df) / df) / df) / df


@lru_cache(maxsize=1024)
def t_ppf(p: float, df: int) -> float:
    """Quantile of Student t with integer df (0 < p < 1)."""
    if not 0 < p < 1:
        raise ValueError("p must be in (0, 1)")
    if p < 0.5:
        return -t_ppf(1 - p, df)
    if p == 0.5:
        return 0.0
    if df > _LARGE_DF:
        return _t_ppf_expansion(p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    x = min(max(norm_ppf(p), lo), hi)
    for _ in range(100):
        f = t_cdf(x, df) - p
        if f > 0:
            hi = x
        else:
            lo = x
        step = f / t_pdf(x, df)
        nxt = x - step
        if not lo < nxt < hi:  # Newton left the bracket: bisect instead
            nxt = (lo + hi) / 2
        if abs(nxt - x) <= 1e-13 * max(1.0, abs(x)):
            return nxt
        x = nxt
    return x


EXACT_SIGN_N = 2_000


def _lower_tail(n: int, k: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), k < n / 2, summed downward from the k-th term in floats."""
    log_term = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2)
    if log_term < -745:  # below the smallest double: the tail is 0 to double precision
        return 0.0
    term = math.exp(log_term)
    total = 0.0
    i = k
    while i >= 0:
        total += term
        if term < 1e-17 * total:
            break
        term *= i / (n - i + 1)
        i -= 1
    return total


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact binomial test of wins vs losses at p = 1/2 (symmetric: twice the smaller tail)."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    if 2 * k >= n:  # wins == losses: the two tails cover everything
        return 1.0
    if n > EXACT_SIGN_N:
        return min(1.0, 2 * _lower_tail(n, k))
    tail = Fraction(sum(math.comb(n, i) for i in range(k + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))

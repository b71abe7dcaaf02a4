"""What a claim means: the gain's lower confidence bound and a shrunken estimate beside the observed one.

Among comparisons that claim, the observed gain is biased upward (the winner's curse: at a true +3 pp and
500 tasks x 2 attempts, claims fire ~27% of the time and then report ~+5.1 on average). The shrunken estimate
is the posterior mean under a sceptical prior (Spiegelhalter, Freedman & Parmar 1994, "Bayesian approaches
to randomized trials", J R Stat Soc A 157:357-416, the "sceptical prior"): the true gain ~ N(0, tau^2) with tau chosen
so that a gain of --min-diff or more has prior probability 5% (tau = min_diff / 1.645; 1 pp when min_diff is
0), and the observed gain ~ N(gain, SE^2), so

    shrunk = diff * tau^2 / (tau^2 + SE^2).

A posterior does not depend on which comparisons were selected (Dawid 1994, "Selection paradoxes of
Bayesian inference"), so as far as the prior fits, a claim's shrunken estimate is not inflated by the claim
rule. tests/stats/test_shrunken_estimate.py checks by simulation that it removes most of the bias among
claims at a true +3 pp. The lower bound is the lower end of the row's (multiplicity-adjusted) CI: the gain
is at least that much at the CI's one-sided level, and a claim needs it above 0.
"""

from __future__ import annotations

import math

Z_PRIOR = 1.6448536269514722  # prior P(gain >= min_diff) = 5%
FLOOR_PP = 1.0  # the prior scale's --min-diff when it is 0


def prior_sd(min_diff_pp: float) -> float:
    """tau in points: the sceptical prior's standard deviation."""
    return max(min_diff_pp, FLOOR_PP) / Z_PRIOR


def shrunk(diff_pp: float | None, se_pp: float | None, min_diff_pp: float) -> float | None:
    """The posterior mean of the gain (points); None where the difference or its SE is undefined."""
    if diff_pp is None or se_pp is None or not (math.isfinite(diff_pp) and math.isfinite(se_pp)):
        return None
    tau2 = prior_sd(min_diff_pp) ** 2
    return round(diff_pp * tau2 / (tau2 + se_pp * se_pp), 4)

"""`plan`'s power at few tasks is that of the interval `compare` prints (issue 58): simulated runs compared
by stats.kernel.diff_interval claim as often as `power.claim_probability` says, at 5-50 tasks, where the
normal approximation plan used before said 63.6% for 25.5% (5 tasks x 4) and 61% for 55% (20 x 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trialbook.stats import dist
from trialbook.stats.kernel import attempt_scale, diff_interval
from trialbook.stats.power import PlanRequest, claim_probability, plan, tasks_needed

DESIGNS = [(5, 4, 0.30), (10, 2, 0.20), (20, 4, 0.15), (20, 4, 0.10), (30, 1, 0.15), (50, 2, 0.10)]


def _simulate(rng: np.random.Generator, n: int, k: int, delta: float, reps: int) -> tuple[float, float]:
    """(claim rate with min-diff 4 pp, the task differences' true variance) of a +delta candidate on tasks of
    rates beta(.5, .5) x 0.7, k attempts each."""
    pb = rng.beta(0.5, 0.5, (reps, n)) * 0.7
    pc = pb + delta
    d = rng.binomial(k, pc) / k - rng.binomial(k, pb) / k
    hits = 0
    for row in d:
        iv = diff_interval(row, 0.95, float(attempt_scale(k)))
        hits += bool(iv.lo > 0 and iv.mean >= 0.04)
    big = rng.beta(0.5, 0.5, 400_000) * 0.7
    var_d = float(np.mean(big * (1 - big) + (big + delta) * (1 - big - delta)) / k)
    return hits / reps, var_d


@pytest.mark.parametrize(("n", "k", "delta"), DESIGNS)
def test_claim_probability_is_the_simulated_claim_rate(n: int, k: int, delta: float):
    rng = np.random.default_rng(n * 100 + k)
    rate, var_d = _simulate(rng, n, k, delta, 3000)
    predicted = claim_probability(var_d, n, delta, k, 0.04)
    assert abs(predicted - rate) < 0.03, (predicted, rate)  # Monte Carlo SE ~0.009
    normal = dist.norm_cdf((delta - max(0.04, 1.959964 * math.sqrt(var_d / n))) / math.sqrt(var_d / n))
    if n <= 5:  # where the normal approximation is off most
        assert normal - rate > 0.04


def test_plan_prints_the_small_sample_power_and_tasks_needed():
    out = plan(None, PlanRequest(20, 4, 15.0, base_rate=50.0, min_diff=4.0))
    var_d = 2 * 0.25 / 4
    assert out.claim_power == round(claim_probability(var_d, 20, 0.15, 4, 0.04), 4)
    assert out.power == round(claim_probability(var_d, 20, 0.15, 4), 4)
    need = out.tasks_needed["4"]
    assert claim_probability(var_d, need, 0.15, 4) >= 0.8 > claim_probability(var_d, need - 1, 0.15, 4)
    assert need > math.ceil((1.959964 + 0.841621) ** 2 * var_d / 0.15**2)  # a few more than the normal answer
    assert tasks_needed(0.0, 0.1, 1) == 2

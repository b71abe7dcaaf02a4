"""Coverage of the paired interval (stats.kernel.diff_interval) by simulation, at n = 5, 6, 10, 20, 50 tasks.

Truth is the mean task difference of the population the tasks are drawn from. Designs: binary tasks (one
attempt) with a trinomial difference (wins, ties, losses in fixed shares), tasks of varying difficulty with
a planted gain, and tie-heavy bimodal tasks (most tasks always or never solved), where every honest
interval is wider than 95% needs (docs/statistics.md). 1,500 replications a cell (Monte Carlo SE ~0.6 pp)."""

from __future__ import annotations

import numpy as np
import pytest

from trialbook.stats.kernel import diff_interval

REPS = 1_500
NS = (5, 6, 10, 20, 50)


def _trinomial(p_loss: float, p_tie: float):
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.choice([-1.0, 0.0, 1.0], p=[p_loss, p_tie, 1 - p_loss - p_tie], size=(REPS, n))

    return draw, 1 - 2 * p_loss - p_tie


def _tasks(a: float, b: float, gain: float, attempts: int):
    def draw(rng: np.random.Generator, n: int) -> np.ndarray:
        base = rng.beta(a, b, (REPS, n))
        cand = np.clip(base + gain, 0, 1)
        return (rng.binomial(attempts, cand) - rng.binomial(attempts, base)) / attempts

    big = np.random.default_rng(0).beta(a, b, 400_000)
    return draw, float(np.mean(np.clip(big + gain, 0, 1) - big))


def coverage(draw, truth: float, n: int, seed: int) -> float:
    d = draw(np.random.default_rng(seed), n)
    hits = 0
    for row in d:
        r = diff_interval(row)
        hits += r.lo <= truth <= r.hi
    return hits / REPS


INFORMATIVE = {
    "binary, 20% lost 30% tied 50% won": _trinomial(0.2, 0.3),
    "binary, 25% lost 25% tied 50% won": _trinomial(0.25, 0.25),
}
CONSERVATIVE = {  # tasks of varying difficulty; most tie in the second
    "tasks Beta(2, 5) + 30 pp, 1 attempt": _tasks(2, 5, 0.3, 1),
    "tasks Beta(0.3, 3) + 5 pp, 1 attempt": _tasks(0.3, 3, 0.05, 1),
}


@pytest.mark.parametrize("design", sorted(INFORMATIVE))
def test_coverage_is_nominal_where_tasks_differ(design):
    draw, truth = INFORMATIVE[design]
    got = {n: coverage(draw, truth, n, seed=n) for n in NS}
    for n, c in got.items():
        assert c >= 0.93, (n, got)  # the t interval had 64% at n = 6, 78% at n = 10 (the audit)
        if n >= 10:
            assert c <= 0.975, (n, got)  # not bought by a useless width
        else:
            assert c <= 0.99, (n, got)  # at 5-6 tasks the interval is conservative (docs/statistics.md)


@pytest.mark.parametrize("design", sorted(CONSERVATIVE))
def test_coverage_holds_when_tasks_vary_or_tie(design):
    draw, truth = CONSERVATIVE[design]
    got = {n: coverage(draw, truth, n, seed=100 + n) for n in NS}
    assert all(c >= 0.93 for c in got.values()), got
    assert got[50] <= 0.97, got

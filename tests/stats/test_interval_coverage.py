"""Coverage of the paired interval at every n (issue 58), a smaller copy of benchmarks/bench_interval_coverage.py:
its 10 named designs (ties, p near 0 and 1, +85 pp, heterogeneous tasks with 1-8 attempts) and its declared
grid of 56, n = 5 to 50. One method at every n (no switch at 30 tasks), checked row by row against
stats.kernel.diff_interval."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

from trialbook.stats.kernel import attempt_scale, diff_interval

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "bench_interval_coverage", ROOT / "benchmarks" / "bench_interval_coverage.py"
)
bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
sys.modules[spec.name] = bench  # type: ignore[union-attr]
spec.loader.exec_module(bench)  # type: ignore[union-attr]

NS = (5, 10, 20, 30, 34, 40, 50)
REPS = 2500


def test_coverage_from_5_to_50_tasks_on_ten_designs():
    rng = np.random.default_rng(58)
    bench.check_against_kernel(rng)  # the vectorised interval is the kernel's
    cov = bench.coverage(bench.DESIGNS, NS, REPS, rng, only="now")["now"]
    for name, c in cov.items():
        assert min(c) >= 93.0, (name, c)  # never below nominal by more than the simulation's noise
        assert max(c[3:]) <= 98.5, (name, c)  # from 30 tasks on, at most a little conservative
    # the audit's worst cases before: 89.1% at 34 tasks for +85 pp, 93.3% at 30 for p near 1
    assert cov["+85 pp: 10% vs 95%, K=1"][4] >= 94 and cov["p near 1: 90% vs 97%, K=1"][3] >= 93.5
    # the four designs of several attempts: 93-97.5% at every n from 5 tasks (c^2 = 1/K gave 99.0-99.6% at 5)
    assert len([n for n in bench.within(cov, 93.0, 97.5) if not n.endswith("K=1")]) == 4, cov


def test_within_93_to_97_percent_at_every_n_from_5_to_50_on_the_declared_grid():
    """The done-when: 93-97% at n = 5, 10, 20, 30, 34, 40, 50 on at least 6 designs, counted on the grid
    declared before c was chosen (the benchmark at 20,000 replications: docs/statistics.md)."""
    rng = np.random.default_rng(5800)
    cov = bench.coverage(bench.GRID, NS, REPS, rng, only="now")["now"]
    assert len(bench.within(cov)) >= 6, bench.within(cov)
    # never below 92.5% (Monte Carlo SE 0.44 points a cell here) but where the candidate's tasks are all 100%
    for name, c in cov.items():
        if not name.startswith("all 90%, +10 pp"):
            assert min(c) >= 92.5, (name, c)


def test_raising_one_task_never_loses_a_claim():
    """Monotone claims at every K: raising one task's difference never lowers either end (the ends are the
    best over every d' <= d, stats.kernel.lower_ends); the plain ends lost a claim in ~0.2% of such raises."""
    rng = np.random.default_rng(11)
    lowered = 0
    for _ in range(3000):
        k = int(rng.choice([1, 2, 3, 4, 8]))
        n = int(rng.choice([5, 10, 20, 30, 40, 50]))
        p = rng.beta(0.5, 0.5, n)
        d = rng.binomial(k, np.clip(p + rng.uniform(0, 0.3), 0, 1)) / k - rng.binomial(k, p) / k
        raised = d.copy()
        i = rng.integers(n)
        raised[i] = min(1.0, raised[i] + rng.integers(1, k + 1) / k)
        before, after = (
            diff_interval(d, 0.95, float(attempt_scale(k))),
            diff_interval(raised, 0.95, float(attempt_scale(k))),
        )
        lowered += after.lo < before.lo - 1e-12 or after.hi < before.hi - 1e-12
    assert lowered == 0


def test_thirty_tasks_all_one_third_give_a_real_interval():
    d = np.full(30, 2 / 3) - np.full(30, 1 / 3)  # every difference +1/3 up to the last float bit
    assert d.std() < 1e-15
    r = diff_interval(d)
    assert r.hi - r.lo > 0.05 and r.lo < 1 / 3 < r.hi
    three = diff_interval(d, 0.95, 1 / 6)  # three attempts a task: pseudo-tasks at +-1/sqrt(6)
    assert 0.03 < three.hi - three.lo < r.hi - r.lo

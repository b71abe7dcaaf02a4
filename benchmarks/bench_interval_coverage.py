"""Benchmark (a simulation, not a timing): coverage of the paired interval at n = 5 to 500 tasks.

Run by hand:  python benchmarks/bench_interval_coverage.py [--reps 20000] [--seed 1] [--more]
For each design (per-task solve probabilities of two runs, K attempts a task) and each n it simulates
`--reps` pairs of runs, takes the task differences d_i, and counts how often each interval holds the true
difference of the runs' expected pass rates. The methods:

- `now`: stats.kernel.diff_interval (Agresti-Min pseudo-tasks at +-c, c^2 = 1/K, t on 2n df, every n);
- `before`: the interval before issue 58 (pseudo-tasks at +-1 below 30 tasks or when the SD is 0, else t);
- `t`: the plain one-sample t interval (scipy's ttest_1samp), for reference;
- `am1`: `now` with c = 1 whatever K (the paper's pseudo-tasks), to show what the 1/K scale buys;
- `half`, `third`: `now` with c^2 = 1/(2K) and 1/(3K) for K >= 2 (K = 1 as `now`): the smaller pseudo-tasks tried for
  5-10 tasks of several attempts (docs/statistics.md: why they were not adopted).

The intervals are computed vectorised here; rows of `now` are checked against the kernel itself first.
The figures go to docs/statistics.md; tests/stats/test_interval_coverage.py runs a smaller copy.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from scipy import stats

from trialbook.stats.kernel import diff_interval

NS = (5, 10, 20, 30, 34, 40, 50, 100, 500)
Design = tuple[Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]], int]


def binary(pb: float, pc: float) -> Design:
    return (lambda rng, size: (np.full(size, pb), np.full(size, pc))), 1


def hetero(a: float, b: float, shift: float, k: int) -> Design:
    def draw(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        p = rng.beta(a, b, size)
        return p, np.clip(p + shift, 0, 1)

    return draw, k


DESIGNS: dict[str, Design] = {
    "A/A, ties (beta(.5,.5) tasks, K=1)": hetero(0.5, 0.5, 0.0, 1),
    "50% vs 50%, K=1": binary(0.5, 0.5),
    "+10 pp, uniform tasks, K=1": hetero(1, 1, 0.10, 1),
    "p near 0: 5% vs 10%, K=1": binary(0.05, 0.10),
    "p near 1: 90% vs 97%, K=1": binary(0.90, 0.97),
    "+85 pp: 10% vs 95%, K=1": binary(0.10, 0.95),
    "+5 pp, beta(2,2) tasks, K=2": hetero(2, 2, 0.05, 2),
    "+10 pp, beta(.5,.5) tasks, K=3": hetero(0.5, 0.5, 0.10, 3),
    "+10 pp, beta(.5,.5) tasks, K=4": hetero(0.5, 0.5, 0.10, 4),
    "+8 pp, beta(.3,.7) tasks, K=8": hetero(0.3, 0.7, 0.08, 8),
}
# `--more`: designs of several attempts with a floor of ties, where smaller pseudo-tasks (`half`, `third`) fall short
MORE: dict[str, Design] = {
    "+85 pp: 10% vs 95%, K=2": (binary(0.10, 0.95)[0], 2),
    "p near 0: 5% vs 10%, K=4": (binary(0.05, 0.10)[0], 4),
    "50% vs 50%, K=2": (binary(0.5, 0.5)[0], 2),
}


def truth(design: Design, rng: np.random.Generator) -> float:
    p, q = design[0](rng, 4_000_000)
    return float(q.mean() - p.mean())


def simulate(design: Design, n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, n) task differences: each task drawn from the design, K attempts in each run."""
    draw, k = design
    p, q = draw(rng, reps * n)
    sb = rng.binomial(k, p) / k
    sc = rng.binomial(k, q) / k
    return (sc - sb).reshape(reps, n)


def adjusted(d: np.ndarray, scale2: float, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[1]
    total = n + 2.0
    m = d.sum(1) / total
    var = np.maximum(((d * d).sum(1) + scale2) / total - m * m, 0.0)
    half = stats.t.ppf(0.5 + level / 2, 2 * n) * np.sqrt(var / total)
    return m - half, m + half


def t_plain(d: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[1]
    m = d.mean(1)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * d.std(1, ddof=1) / np.sqrt(n)
    return m - half, m + half


def methods(d: np.ndarray, k: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    n = d.shape[1]
    now = adjusted(d, 1.0 / k)
    am1 = adjusted(d, 1.0)
    t = t_plain(d)
    tied = d.std(1) == 0
    before = am1 if n < 30 else (np.where(tied, am1[0], t[0]), np.where(tied, am1[1], t[1]))
    half = adjusted(d, 1.0 / (2 * k)) if k > 1 else now
    third = adjusted(d, 1.0 / (3 * k)) if k > 1 else now
    return {"now": now, "before": before, "t": t, "am1": am1, "half": half, "third": third}


def check_against_kernel(rng: np.random.Generator) -> None:
    for name, design in DESIGNS.items():
        d = simulate(design, 12, 5, rng)
        lo, hi = adjusted(d, 1.0 / design[1])
        for row, a, b in zip(d, lo, hi, strict=True):
            r = diff_interval(row, 0.95, 1.0 / design[1])
            assert abs(r.lo - a) < 1e-9 and abs(r.hi - b) < 1e-9, name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--more", action="store_true", help="the designs of MORE instead of DESIGNS")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    check_against_kernel(rng)
    table: dict[str, dict[str, list[float]]] = {}
    for name, design in (MORE if args.more else DESIGNS).items():
        mu = truth(design, rng)
        for n in NS:
            reps = args.reps if n <= 100 else max(args.reps // 5, 1000)
            d = simulate(design, n, reps, rng)
            for method, (lo, hi) in methods(d, design[1]).items():
                lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
                hit = (lo <= mu + 1e-12) & (mu - 1e-12 <= hi)
                table.setdefault(method, {}).setdefault(name, []).append(100 * float(hit.mean()))
    for method, rows in table.items():
        print(f"\n{method}: coverage % (reps {args.reps}; {max(args.reps // 5, 1000)} at n > 100)\n")
        print("| design | " + " | ".join(f"n = {n}" for n in NS) + " |")
        print("|---|" + "---|" * len(NS))
        for name, cov in rows.items():
            print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cov) + " |")


if __name__ == "__main__":
    main()

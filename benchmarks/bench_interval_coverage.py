"""Benchmark (a simulation, not a timing): coverage of the paired interval at n = 5 to 500 tasks.

Run by hand:  python benchmarks/bench_interval_coverage.py [--reps 20000] [--seed 1] [--grid]
For each design (per-task solve probabilities of two runs, K attempts a task) and each n it simulates
`--reps` pairs of runs, takes the task differences d_i, and counts how often each interval holds the true
difference of the runs' expected pass rates. The methods:

- `now`: stats.kernel.diff_interval (Agresti-Min pseudo-tasks at +-c, c^2 = 1 for one attempt and 1/(2K) for
  K >= 2, t on 2n df, each end made monotone in d; every n);
- `previous`: the same with c^2 = 1/K and the plain ends (not monotone), the interval before this change;
- `before`: the interval before issue 58 (pseudo-tasks at +-1 below 30 tasks or when the SD is 0, else t);
- `t`: the plain one-sample t interval (scipy's ttest_1samp), for reference.

`--grid` runs, instead of the ten named designs, the GRID declared before c was chosen (7 task
distributions x no gain / +10 pp x K = 1, 2, 4, 8: 56 designs) and HELD_OUT (40 designs drawn at random
after it was chosen), and counts the designs within 93-97% at every n from 5 to 50.
`now` is the kernel's own lower_ends over every replication at once; rows of it are checked against
diff_interval first.
The figures go to docs/statistics.md; tests/stats/test_interval_coverage.py runs a smaller copy.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable

import numpy as np
from scipy import stats

from trialbook.stats.kernel import attempt_scale, diff_interval, lower_ends

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
_TASKS = {"beta(.5,.5)": (0.5, 0.5), "uniform": (1.0, 1.0), "beta(2,2)": (2.0, 2.0), "beta(.3,.7)": (0.3, 0.7),
          "all 50%": 0.5, "all 5%": 0.05, "all 90%": 0.9}  # fmt: skip
GRID: dict[str, Design] = {
    f"{name}, {'+10 pp' if shift else 'no gain'}, K={k}": (
        hetero(*tasks, shift, k) if isinstance(tasks, tuple) else (binary(tasks, min(1.0, tasks + shift))[0], k)
    )
    for (name, tasks), shift, k in itertools.product(_TASKS.items(), (0.0, 0.1), (1, 2, 4, 8))
}


def held_out(seed: int = 7, count: int = 40) -> dict[str, Design]:
    """Designs drawn at random: K of 1-10, tasks beta(a, b) with a, b in [0.3, 3], a gain of -15 to +15 pp."""
    rng = np.random.default_rng(seed)
    out: dict[str, Design] = {}
    for _ in range(count):
        k = int(rng.choice([1, 2, 3, 4, 5, 8, 10]))
        a, b = rng.uniform(0.3, 3, 2)
        shift = float(rng.uniform(-0.15, 0.15))
        out[f"K={k} beta({a:.2f},{b:.2f}) {100 * shift:+.1f} pp"] = hetero(float(a), float(b), shift, k)
    return out


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
    """The augmented sample's interval, row by row, with plain ends (not monotone)."""
    n = d.shape[1]
    total = n + 2.0
    m = d.sum(1) / total
    var = np.maximum(((d * d).sum(1) + scale2) / total - m * m, 0.0)
    half = stats.t.ppf(0.5 + level / 2, 2 * n) * np.sqrt(var / total)
    return m - half, m + half


def monotone(d: np.ndarray, scale2: float, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's monotone ends, row by row (stats.kernel.lower_ends takes every row at once)."""
    q = stats.t.ppf(0.5 + level / 2, 2 * d.shape[1])
    return lower_ends(d, scale2, q), -lower_ends(-d, scale2, q)


def t_plain(d: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    n = d.shape[1]
    m = d.mean(1)
    half = stats.t.ppf(0.5 + level / 2, n - 1) * d.std(1, ddof=1) / np.sqrt(n)
    return m - half, m + half


def methods(d: np.ndarray, k: int, only: str | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    n = d.shape[1]
    now = monotone(d, float(attempt_scale(k)))
    if only == "now":
        return {"now": now}
    am1 = adjusted(d, 1.0)
    t = t_plain(d)
    tied = d.std(1) == 0
    before = am1 if n < 30 else (np.where(tied, am1[0], t[0]), np.where(tied, am1[1], t[1]))
    return {"now": now, "previous": adjusted(d, 1.0 / k), "before": before, "t": t}


def check_against_kernel(rng: np.random.Generator) -> None:
    for name, design in DESIGNS.items():
        d = simulate(design, 12, 5, rng)
        scale2 = float(attempt_scale(design[1]))
        lo, hi = monotone(d, scale2)
        for row, a, b in zip(d, lo, hi, strict=True):
            r = diff_interval(row, 0.95, scale2)
            assert abs(r.lo - a) < 1e-9 and abs(r.hi - b) < 1e-9, name


def coverage(designs: dict[str, Design], ns: tuple[int, ...], reps: int, rng: np.random.Generator,
             only: str | None = None) -> dict[str, dict[str, list[float]]]:  # fmt: skip
    """method -> design -> coverage % at each n."""
    table: dict[str, dict[str, list[float]]] = {}
    for name, design in designs.items():
        mu = truth(design, rng)
        for n in ns:
            d = simulate(design, n, reps if n <= 100 else max(reps // 5, 1000), rng)
            for method, (lo, hi) in methods(d, design[1], only).items():
                lo, hi = np.maximum(lo, -1.0), np.minimum(hi, 1.0)
                hit = (lo <= mu + 1e-12) & (mu - 1e-12 <= hi)
                table.setdefault(method, {}).setdefault(name, []).append(100 * float(hit.mean()))
    return table


def within(rows: dict[str, list[float]], low: float = 93.0, high: float = 97.0) -> list[str]:
    """The designs whose coverage is in [low, high] at every n given."""
    return [name for name, cov in rows.items() if all(low <= c <= high for c in cov)]


def _grid(reps: int, rng: np.random.Generator) -> None:
    ns = tuple(n for n in NS if n <= 50)
    for label, designs in (("GRID (declared before c was chosen)", GRID), ("HELD_OUT (drawn after)", held_out())):
        table = coverage(designs, ns, reps, rng)
        print(f"\n{label}: {len(designs)} designs, n = 5-50, {reps} replications a cell\n")
        print("| method | designs within 93-97% at every n | cells < 93% | cells > 97% | lowest | mean abs(cov - 95) |")
        print("|---|---|---|---|---|---|")
        for method, rows in table.items():
            cells = [c for cov in rows.values() for c in cov]
            dev = sum(abs(c - 95) for c in cells) / len(cells)
            print(
                f"| {method} | {len(within(rows))} | {sum(c < 93 for c in cells)} | {sum(c > 97 for c in cells)} "
                f"| {min(cells):.1f} | {dev:.2f} |"
            )
        print(f"\nnow, designs within: {'; '.join(within(table['now']))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--grid", action="store_true", help="GRID and HELD_OUT, counted, instead of DESIGNS")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    check_against_kernel(rng)
    if args.grid:
        _grid(args.reps, rng)
        return
    table = coverage(DESIGNS, NS, args.reps, rng)
    for method, rows in table.items():
        print(f"\n{method}: coverage % (reps {args.reps}; {max(args.reps // 5, 1000)} at n > 100)\n")
        print("| design | " + " | ".join(f"n = {n}" for n in NS) + " |")
        print("|---|" + "---|" * len(NS))
        for name, cov in rows.items():
            print(f"| {name} | " + " | ".join(f"{c:.1f}" for c in cov) + " |")


if __name__ == "__main__":
    main()

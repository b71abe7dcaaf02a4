"""Benchmark (a simulation, not a timing): the winner's curse among `compare`'s claims, and what the
selection-adjusted estimates of the literature would print instead.

Run by hand:  python benchmarks/bench_winners_curse.py [--reps 2000] [--seed 58]
Each replication draws n tasks (base rates uniform(0, 0.8), the candidate +effect on every task), K attempts
each, and judges the task differences with compare's interval (stats.kernel.diff_interval) at 97.5% (a
family's first look) and 95% (`--family none`), claim rule: lower end > 0 and difference >= 4 pp. Among the
claims it averages: the raw difference (what compare prints), the CI's lower end (printed beside a claim),
the conditional MLE given the claim (a truncated normal; Zhong & Prentice 2008, Ghosh, Zou & Wright 2008),
the conditionally median-unbiased estimate, and the two's compromise (the mean of the raw and the MLE,
Ghosh et al.). The figures go to docs/statistics.md ("What a claim means").
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import optimize, stats

from trialbook.stats import dist
from trialbook.stats.kernel import attempt_scale, diff_interval

DESIGNS = ((100, 1), (100, 2), (100, 4), (500, 1), (500, 2))
MIN_DIFF = 0.04


def adjusted(x: float, sigma: float, cut: float) -> tuple[float, float]:
    """(conditional MLE, conditional median-unbiased) of mu given X = x ~ N(mu, sigma^2) and X > cut."""

    def mle(mu: float) -> float:
        a = (cut - mu) / sigma
        return mu + sigma * np.exp(stats.norm.logpdf(a) - stats.norm.logsf(a)) - x

    def median(mu: float) -> float:
        return stats.norm.logsf((x - mu) / sigma) - stats.norm.logsf((cut - mu) / sigma) - np.log(0.5)

    out = []
    for f in (mle, median):
        out.append(max(-1.0, optimize.brentq(f, -1000, 5)) if f(-1000) < 0 else -1.0)
    return out[0], out[1]


def cell(rng: np.random.Generator, n: int, k: int, effect: float, level: float, reps: int) -> dict[str, float]:
    rows = []
    q = dist.t_ppf(0.5 + level / 2, 2 * n)
    for _ in range(reps):
        pb = rng.uniform(0, 0.8, n)
        d = rng.binomial(k, pb + effect) / k - rng.binomial(k, pb) / k
        iv = diff_interval(d, level, float(attempt_scale(k)))
        if iv.lo > 0 and iv.mean >= MIN_DIFF:
            sigma = iv.se * (n + 2) / n  # the raw mean's SE; claim: raw mean > q x sigma and >= MIN_DIFF
            mle, med = adjusted(iv.mean, sigma, max(q * sigma, MIN_DIFF))
            rows.append((iv.mean, iv.lo, mle, med, (iv.mean + mle) / 2, iv.lo <= effect))
    a = np.array(rows) if rows else np.full((1, 6), np.nan)
    names = ("raw", "lower_end", "cond_mle", "cond_median", "compromise")
    return {"power": len(rows) / reps, **{m: 100 * float(a[:, i].mean()) for i, m in enumerate(names)},
            "lower_end_holds": float(a[:, 5].mean())}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=58)
    ap.add_argument("--effect", type=float, default=10.0, help="the true gain, pp")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"true gain +{args.effect:g} pp, {args.reps} replications a cell; means among claims, pp")
    print("| tasks x K | CI level | claims | raw | lower end (holds) | cond. MLE | cond. median | compromise |")
    print("|---|---|---|---|---|---|---|---|")
    for n, k in DESIGNS:
        for level in (0.975, 0.95):
            r = cell(rng, n, k, args.effect / 100, level, args.reps)
            print(f"| {n} x {k} | {100 * level:g}% | {100 * r['power']:.1f}% | {r['raw']:+.2f} |"
                  f" {r['lower_end']:+.2f} ({100 * r['lower_end_holds']:.1f}%) | {r['cond_mle']:+.2f} |"
                  f" {r['cond_median']:+.2f} | {r['compromise']:+.2f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

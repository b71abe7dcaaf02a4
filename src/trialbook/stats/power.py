"""Power, minimum detectable effect and sample size from the variance decomposition (Miller 2024,
"Adding Error Bars to Evals": paired differences, K attempts per task).

Power is that of the interval `compare` prints (stats.kernel.diff_interval: pseudo-tasks at +-c, c^2 = 1/(2K)
for K >= 2 and 1 for one attempt, t on 2n df; its monotone ends can claim a little more often, which this
leaves out), at every n: `claim_probability` integrates its claim rule over the sampling distribution of the
task differences' mean (normal) and sample variance (scaled chi-square, Wilson-Hilferty quantiles), so the
power at 5-50 tasks is that of the small-sample interval, not of the normal approximation (which said
63.6% where simulation gives 25.5% at 5 tasks x 4 attempts; tests/stats/test_power_small_n.py). The half-
widths and MDEs are the normal approximation's; tasks needed is the smallest n with POWER by the same rule.

With K attempts per task, Var(d_i) = ω² + (σ_A² + σ_B²)/K: ω² is the variance of the true
per-task differences, σ² the mean within-task (sampling) variance of one attempt, estimated as the
mean of per-task sample variances over tasks with >= 2 graded attempts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.result_types import Result, optional
from trialbook.stats import dist
from trialbook.stats.compare import align, partial_caveat
from trialbook.stats.comparison import PlanRequest
from trialbook.stats.kernel import attempt_scale
from trialbook.stats.scores import TaskScores, load_scores

KS: tuple[int, ...] = (1, 2, 4, 8, 16)
ALPHA, POWER = 0.05, 0.80
Z_A = float(dist.norm_ppf(1 - ALPHA / 2))
Z_B = float(dist.norm_ppf(POWER))


@dataclass(frozen=True)
class VarianceSource(Result):
    kind: str  # runs or assumption
    detail: str


@dataclass(frozen=True)
class Variance(Result):
    omega2: float  # variance of the true per-task differences
    sampling_k1: float  # sampling variance of one attempt in each run
    var_d_k1: float
    sampling_share: float  # of Var(d) at the planned K


@dataclass(frozen=True, kw_only=True)
class PowerPlan(Result):
    """`plan`: half-width, MDE and tasks needed per K (keys: K as text), power at the planned design."""

    tasks: int
    repeats: int
    effect_pp: float
    min_diff_pp: float
    metric: str
    source: VarianceSource
    variance: Variance
    half_width_pp: dict[str, float]
    mde_pp: dict[str, float]
    tasks_needed: dict[str, int]
    power: float
    claim_power: float
    notes: list[str]
    answer: str | None = optional()  # what `plan` chose when --tasks or --attempts was omitted


def within_variance(s: TaskScores) -> float | None:
    """Mean per-task sample variance (ddof=1) of attempt values under the run's metric (binary for
    resolved, rewards for reward), over tasks with >= 2 graded: (sum x^2 - (sum x)^2 / k) / (k - 1)."""
    k, c, sq = s.graded, s.successes, s.squares
    m = k >= 2
    if not m.any():
        return None
    return float(np.mean(np.maximum(sq[m] - c[m] ** 2 / k[m], 0.0) / (k[m] - 1)))


def _one_run(s: TaskScores) -> tuple[float, float, VarianceSource, list[str]]:
    sigma2 = within_variance(s)
    scored = s.score[s.scored]
    if sigma2 is None:
        p = float(scored.mean())
        return (
            0.0,
            2 * p * (1 - p),
            _src("run", f"'{s.run}' (1 attempt/task: sampling variance p(1-p) at its rate)"),
            [
                "the run has one attempt per task: Var(d) is taken as 2p(1-p), as if every task were equally"
                " hard - an upper bound at K=1 (real paired runs vary less; give --vs RUN2), and the rows for"
                " more repeats assume all of it is sampling noise"
            ],
        )
    detail = f"'{s.run}': {int(scored.size)} tasks, within-task variance {sigma2:.4f}"
    return (
        0.0,
        2 * sigma2,
        _src("run", detail),
        [
            "one run gives the sampling noise only; true per-task differences (ω²) are taken as 0, so"
            " these figures are optimistic: give --vs RUN2 to estimate ω² from a real pair"
        ],
    )


def _two_runs(a: TaskScores, b: TaskScores) -> tuple[float, float, VarianceSource, list[str]]:
    _, ia, ib, _ = align(a, b)
    if ia.size < 3:
        raise UserError(f"runs '{a.run}' and '{b.run}' share fewer than 3 graded tasks")
    d = b.score[ib] - a.score[ia]
    var_d = float(d.var(ddof=1))
    inv_a, inv_b = float(np.mean(1 / a.graded[ia])), float(np.mean(1 / b.graded[ib]))
    sa, sb = within_variance(a), within_variance(b)
    detail = f"'{a.run}' vs '{b.run}': {ia.size} paired tasks, Var(d) {var_d:.4f}"
    if sa is None or sb is None:
        # Without repeats the split of Var(d) is not identifiable: attribute all of it to sampling
        # noise (ω² = 0), so the observed attempt count reproduces the observed Var(d) exactly.
        if sa is None and sb is None:
            sa = sb = var_d / (inv_a + inv_b)
        elif sa is None:
            assert sb is not None  # the branch above took both None
            sa = max(0.0, (var_d - sb * inv_b) / inv_a)
        else:
            sb = max(0.0, (var_d - sa * inv_a) / inv_b)
        note = (
            "a run has one attempt per task, so true per-task differences and sampling noise cannot be"
            " separated: all of Var(d) is taken as sampling noise (ω² = 0), which makes the rows for more"
            " repeats optimistic; a pilot with >= 2 attempts per task in both runs fixes this"
        )
        return 0.0, sa + sb, _src("runs", detail), [note]
    omega2 = var_d - (sa * inv_a + sb * inv_b)
    notes = []
    if omega2 < 0:
        notes.append(f"estimated ω² was negative ({omega2:.4f}): set to 0")
        omega2 = 0.0
    return omega2, sa + sb, _src("runs", detail), notes


def _src(kind: str, detail: str) -> VarianceSource:
    return VarianceSource(kind, detail)


def _check(tasks: int | None, repeats: int | None, effect: float, base_rate: float, from_run: str | None,
           vs: str | None, min_diff: float) -> None:  # fmt: skip
    if tasks is not None and tasks < 2:
        raise UserError(f"--tasks must be at least 2, not {tasks}")
    if repeats is not None and repeats < 1:
        raise UserError(f"--attempts must be at least 1, not {repeats}")
    if not math.isfinite(min_diff) or min_diff < 0:  # the rule compare applies
        raise UserError(f"--min-diff must be a non-negative number of points, not {min_diff}")
    if not math.isfinite(effect) or effect <= 0:
        raise UserError(f"--effect must be a positive number of percentage points, not {effect}")
    if not 0 < base_rate < 100:
        raise UserError(f"--base-rate must be a percentage between 0 and 100, not {base_rate}")
    if vs is not None and from_run is None:
        raise UserError("--vs needs --from-run")
    if vs is not None and vs == from_run:
        raise UserError("--vs names the same run as --from-run")


def _design(omega2: float, sampling: float, tasks: int | None, repeats: int | None,
            effect: float) -> tuple[int, int, str | None]:  # fmt: skip
    """The design to report: the one given, or with --tasks / --attempts omitted the smallest that gives
    POWER against `effect` (and the sentence that says so)."""
    delta = effect / 100

    def needed(k: int) -> int:
        return tasks_needed(omega2 + sampling / k, delta, k)

    if tasks is not None and repeats is not None:
        return tasks, repeats, None
    if tasks is None:
        k = repeats or 1
        n = needed(k)
        return n, k, f"{n} tasks at K={k} give {100 * POWER:.0f}% power to detect +{effect:g} pp"
    for k in KS:
        if needed(k) <= tasks:
            return tasks, k, f"K={k} attempts per task give {tasks} tasks {100 * POWER:.0f}% power for +{effect:g} pp"
    k = KS[-1]
    return (
        tasks,
        k,
        (
            f"no K up to {k} gives {tasks} tasks {100 * POWER:.0f}% power for +{effect:g} pp: at K={k} it takes"
            f" {needed(k)} tasks"
        ),
    )


def plan(ledger: Ledger | None, request: PlanRequest) -> PowerPlan:
    r = request
    tasks, repeats, effect, from_run, vs = r.tasks, r.repeats, r.effect, r.from_run, r.vs
    base_rate, min_diff, metric = r.base_rate, r.min_diff, r.metric
    _check(tasks, repeats, effect, base_rate, from_run, vs, min_diff)
    if from_run is not None and ledger is not None:
        runs = [load_scores(ledger, name, metric) for name in (from_run, vs) if name is not None]
        omega2, sampling, source, notes = _two_runs(*runs) if vs else _one_run(runs[0])
        if caveat := partial_caveat(runs):  # they count 0 here: the variance is of resolved, not of reward
            notes = [*notes, caveat]
    else:
        p = base_rate / 100
        omega2, sampling = 0.0, 2 * p * (1 - p)
        source = _src("assumption", f"base rate {base_rate:g}%, every task equally hard (worst case)")
        notes = ["no run given: all variation is taken as sampling noise at the base rate (conservative at K=1)"]
    tasks, repeats, answer = _design(omega2, sampling, tasks, repeats, effect)
    if min_diff > effect:
        notes = [*notes, (
            f"--min-diff {min_diff:g} is above the effect +{effect:g} pp: a true +{effect:g} rarely reaches the claim"
            f" rule (diff >= {min_diff:g}) however many tasks; lower --min-diff to at most {effect:g}"
        )]  # fmt: skip
    ks = sorted(set(KS) | {repeats})
    half, mde, need = {}, {}, {}
    delta = effect / 100
    for k in ks:
        var_d = omega2 + sampling / k
        se = math.sqrt(var_d / tasks)
        half[str(k)] = round(100 * Z_A * se, 4)
        mde[str(k)] = round(100 * (Z_A + Z_B) * se, 4)
        need[str(k)] = tasks_needed(var_d, delta, k)
    var_k = omega2 + sampling / repeats
    variance = Variance(
        omega2=round(omega2, 6), sampling_k1=round(sampling, 6), var_d_k1=round(omega2 + sampling, 6),
        sampling_share=round((sampling / repeats) / var_k, 4) if var_k > 0 else 0.0,
    )  # fmt: skip
    return PowerPlan(
        tasks=tasks, repeats=repeats, effect_pp=effect, min_diff_pp=min_diff, metric=metric, source=source,
        variance=variance, half_width_pp=half, mde_pp=mde, tasks_needed=need,
        power=round(claim_probability(var_k, tasks, delta, repeats), 4),
        claim_power=round(claim_probability(var_k, tasks, delta, repeats, min_diff / 100), 4), notes=notes,
        answer=answer,
    )  # fmt: skip


def tasks_needed(var_d: float, delta: float, k: int) -> int:
    """The fewest tasks at K=k whose claim probability (CI excluding 0) reaches POWER: from the normal
    approximation's answer upwards (the small-sample interval needs a few more tasks, never fewer)."""
    if var_d <= 0:
        return 2
    n = max(2, math.ceil((Z_A + Z_B) ** 2 * var_d / delta**2))
    if n >= LARGE_N:  # the two agree within a fraction of a point of power
        return n
    while claim_probability(var_d, n, delta, k) < POWER and n < LARGE_N:
        n += 1
    return n


LARGE_N = 200  # from this many tasks `tasks_needed` keeps the normal approximation's answer
QUAD_S, QUAD_X = 48, 801  # quadrature points for the sample variance and for the mean


def claim_probability(var_d: float, n: int, delta: float, k: int, min_diff: float = 0.0) -> float:
    """P(compare's lower end > 0 and mean >= min_diff) for n tasks whose differences have mean delta and
    variance var_d, K = k attempts a task (module docstring): the interval of stats.kernel.diff_interval at
    ALPHA, pseudo-tasks at +-c, c^2 = kernel.attempt_scale(k), with the mean ~ N(delta, var_d / n) and the
    sample variance ~ var_d chi2(n-1) / (n-1) independent (normal theory)."""
    total, nu = n + 2.0, max(n - 1, 1)
    c2 = float(attempt_scale(k))
    q = dist.t_ppf(1 - ALPHA / 2, 2 * n)
    if var_d <= 0:  # every task's difference is delta: the interval is still not a point (pseudo-tasks)
        m = n * delta / total
        var = max((n * delta * delta + c2) / total - m * m, 0.0)
        return float(m - q * math.sqrt(var / total) > 0 and delta >= min_diff)
    z = np.array([dist.norm_ppf((i + 0.5) / QUAD_S) for i in range(QUAD_S)])
    chi = nu * np.maximum(1 - 2 / (9 * nu) + z * math.sqrt(2 / (9 * nu)), 0.0) ** 3  # Wilson-Hilferty
    se = math.sqrt(var_d / n)
    xs = delta + se * np.linspace(-8.0, 8.0, QUAD_X)
    w = np.exp(-0.5 * ((xs - delta) / se) ** 2)
    w /= w.sum()
    s1 = n * xs[None, :]
    s2 = var_d * chi[:, None] + n * xs[None, :] ** 2  # sum of d^2: (n-1) s^2 + n mean^2
    mean = s1 / total
    spread = np.maximum((s2 + c2) / total - mean * mean, 0.0)
    ok = (mean - q * np.sqrt(spread / total) > 0) & (xs[None, :] >= min_diff)
    return float((ok * w[None, :]).sum(axis=1).mean())

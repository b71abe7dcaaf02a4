"""`train selection`: which generated rollouts reached a training batch, by task and by duration.

With staleness control an async trainer drops (or regenerates) rollouts that come back too late, and the
late ones are the slow ones, usually of the harder tasks: the trained distribution drifts toward fast
tasks (tinker-cookbook PR #822). The ledger holds every generated rollout; the trainer's step log says
which steps trained. A rollout *reached a batch* when its `step` is a logged step and it has a result
(not `incomplete`); one written with a step the trainer never logged (dropped, or regenerated
elsewhere) or cut off did not.

By duration: rollouts in quartiles of `duration_s` (generated rollouts with a duration), with the share
of each quartile never trained and a chi-square test of independence between quartile and trained
(scipy.stats.chi2_contingency). By task: each task's share never trained, most dropped first, and the
Spearman correlation over tasks between a task's median duration and its dropped share.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sqlalchemy import select

from trialbook.errors import UserError
from trialbook.ledger.schema import steps, trials
from trialbook.ledger.store import Ledger
from trialbook.result_types import Result

QUANTILES = 4


@dataclass(frozen=True)
class DurationBin(Result):
    from_s: float
    to_s: float
    generated: int
    trained: int
    never_trained_pct: float


@dataclass(frozen=True)
class TaskSelection(Result):
    task_id: str
    generated: int
    trained: int
    never_trained_pct: float
    median_duration_s: float | None


@dataclass(frozen=True, kw_only=True)
class SelectionReport(Result):
    run: str
    steps: int  # steps in the trainer's log
    generated: int
    trained: int
    never_trained_pct: float
    mean_duration_generated_s: float | None
    mean_duration_trained_s: float | None
    by_duration: list[DurationBin]
    chi2_p: float | None  # duration quartile vs trained: independence test
    by_task: list[TaskSelection]  # most dropped first
    spearman_duration_dropped: float | None  # over tasks: median duration vs share never trained
    spearman_p: float | None
    warnings: list[str]


def _pct(k: int, n: int) -> float:
    return round(100 * k / n, 2) if n else 0.0


def _mean(x: np.ndarray) -> float | None:
    return round(float(x.mean()), 1) if len(x) else None


def selection_report(ledger: Ledger, run_name: str, top: int = 20) -> SelectionReport:
    from scipy import stats

    run = ledger.get_run(run_name)
    with ledger.engine.connect() as conn:
        logged = {int(s) for (s,) in conn.execute(select(steps.c.step).where(steps.c.run_id == run.id))}
        t = trials.c
        rows = conn.execute(
            select(t.task_id, t.step, t.outcome, t.duration_s).where(t.run_id == run.id, t.superseded_by.is_(None))
        ).all()
    if not logged:
        raise UserError(f"run '{run_name}' has no step log: which rollouts were trained is unknown (`import steps`)")
    if not rows:
        raise UserError(f"run '{run_name}' has no trials")
    task = np.array([r[0] for r in rows], dtype=object)
    trained = np.array([r[1] in logged and r[2] != "incomplete" for r in rows], dtype=bool)
    dur = np.array([np.nan if r[3] is None else float(r[3]) for r in rows])
    warnings = []
    has = np.isfinite(dur)
    bins: list[DurationBin] = []
    chi2_p = None
    if has.sum() >= 2 * QUANTILES:
        edges = np.quantile(dur[has], np.linspace(0, 1, QUANTILES + 1))
        which = np.clip(np.searchsorted(edges, dur[has], side="right") - 1, 0, QUANTILES - 1)
        table = []
        for q in range(QUANTILES):
            m = which == q
            g, k = int(m.sum()), int((trained[has] & m).sum())
            bins.append(DurationBin(round(float(edges[q]), 1), round(float(edges[q + 1]), 1), g, k, _pct(g - k, g)))
            table.append([k, g - k])
        cont = np.array(table)
        if (cont.sum(axis=0) > 0).all() and (cont.sum(axis=1) > 0).all():
            chi2_p = float(stats.chi2_contingency(cont).pvalue)
    else:
        warnings.append("fewer than 8 rollouts with a duration_s: no duration quartiles")
    names, inv = np.unique(task, return_inverse=True)
    gen = np.bincount(inv, minlength=len(names))
    got = np.bincount(inv, weights=trained, minlength=len(names)).astype(int)
    per_task = []
    medians = np.full(len(names), np.nan)
    for i, name in enumerate(names):
        d = dur[(inv == i) & has]
        medians[i] = float(np.median(d)) if len(d) else np.nan
        per_task.append(TaskSelection(str(name), int(gen[i]), int(got[i]), _pct(int(gen[i] - got[i]), int(gen[i])),
                                      None if np.isnan(medians[i]) else round(medians[i], 1)))  # fmt: skip
    rho = rho_p = None
    ok = ~np.isnan(medians)
    dropped_share = 1 - got / gen
    if ok.sum() >= 3 and np.ptp(dropped_share[ok]) > 0 and np.ptp(medians[ok]) > 0:
        res = stats.spearmanr(medians[ok], dropped_share[ok])
        rho, rho_p = round(float(res.statistic), 3), float(res.pvalue)
    per_task.sort(key=lambda r: (-r.never_trained_pct, r.task_id))
    n, k = len(rows), int(trained.sum())
    return SelectionReport(
        run=run_name, steps=len(logged), generated=n, trained=k, never_trained_pct=_pct(n - k, n),
        mean_duration_generated_s=_mean(dur[has]), mean_duration_trained_s=_mean(dur[has & trained]),
        by_duration=bins, chi2_p=chi2_p, by_task=per_task[:top], spearman_duration_dropped=rho, spearman_p=rho_p,
        warnings=warnings,
    )  # fmt: skip

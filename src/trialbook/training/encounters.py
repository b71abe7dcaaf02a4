"""Same-task encounter analysis: does a task's pass rate rise the k-th time training samples it?

An encounter is one sampling of a task: its trajectories sharing one `epoch` (pass over the pool),
or one weight version when the run has no epochs. A task's score at an encounter is the mean of its
graded trajectories there under the report's metric (resolved, or reward: TrainData.wins). For
k = 2, 3, ... the statistic is d_i = score at k-th - score at 1st over the tasks graded at both
(paired over tasks, never over trajectories), with the paired interval on the d_i
(`stats.kernel.t_interval`, the adjusted interval at every n), clipped to
[-100, +100] pp and flagged `few_tasks` below kernel.FEW_TASKS tasks.
Gains on re-encountered tasks mix memorisation of that task with general improvement, so each row
also gives the first-encounter rate of tasks new in the same weight versions (difference-in-differences)
when there are any.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from trialbook.stats.kernel import clip_ci, pooled_interval, t_interval
from trialbook.training.load import TrainData


def paired_ci(d: np.ndarray) -> dict[str, Any]:
    """Mean of task-level differences (percentage points) with the 95% paired interval over tasks,
    clipped to the possible range and flagged below kernel.FEW_TASKS tasks."""
    n = len(d)
    mean, _, lo, hi = t_interval(d, 0.95)
    lo, hi, few = clip_ci(lo, hi, n)
    return {
        "tasks": n,
        "diff_pp": round(100 * mean, 2) if n else None,
        "ci_pp": [round(100 * lo, 2), round(100 * hi, 2)] if n >= 2 else None,
        "few_tasks": few,
    }


@dataclass
class Groups:
    """One row per (task, encounter), sorted by task then encounter order."""

    task: np.ndarray
    rank: np.ndarray  # 0 for the first encounter of the task
    score: np.ndarray  # resolved / graded; nan when nothing graded
    wv: np.ndarray  # earliest weight version in the encounter
    first: np.ndarray  # index of the task's first encounter row
    count: np.ndarray  # encounters of the task


def encounter_groups(data: TrainData) -> Groups:
    key_src = np.where(data.epoch >= 0, data.epoch, data.wv)
    key_src = key_src - key_src.min() if len(key_src) else key_src
    span = int(key_src.max()) + 1 if len(key_src) else 1
    key = data.task.astype(np.int64) * span + key_src
    uniq, inv = np.unique(key, return_inverse=True)
    graded = np.bincount(inv, weights=data.n * data.graded, minlength=len(uniq))
    resolved = np.bincount(inv, weights=data.wins, minlength=len(uniq))
    wv = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(wv, inv, data.wv)
    task = uniq // span
    starts = np.flatnonzero(np.r_[True, task[1:] != task[:-1]])
    counts = np.diff(np.r_[starts, len(task)])
    first = np.repeat(starts, counts)
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(graded > 0, resolved / graded, np.nan)
    return Groups(
        task=task,
        rank=np.arange(len(task)) - first,
        score=score,
        wv=wv,
        first=first,
        count=np.repeat(counts, counts),
    )


MIN_NEW_TASKS = 3  # the k-th minus new tasks difference is given from this many tasks on each side


def _new_tasks(g: Groups, rows: np.ndarray, kth: np.ndarray) -> dict[str, Any]:
    """First-encounter rate of tasks first seen within the weight versions of these k-th encounters, and the
    difference-in-differences: (k-th - 1st) on the re-encountered tasks minus (new tasks' 1st - their 1st),
    which is k-th - new: the gain of seeing a task again over what the weights do on unseen tasks at the same
    time (memorisation, not transfer). Its 95% interval: the two task sets are disjoint tasks of one pool at
    the same weights, so Student's pooled-variance t (`kernel.pooled_interval`); given from MIN_NEW_TASKS
    tasks on each side (with 2 new tasks it covered 90-92%, at 3 and more 93-97%: docs/statistics.md)."""
    lo, hi = g.wv[rows].min(), g.wv[rows].max()
    firsts = (g.rank == 0) & (g.wv >= lo) & (g.wv <= hi) & ~np.isnan(g.score)
    n = int(firsts.sum())
    out: dict[str, Any] = {"new_tasks": n, "new_task_pct": round(100 * float(g.score[firsts].mean()), 2) if n else None}
    if n >= MIN_NEW_TASKS and kth.size >= MIN_NEW_TASKS:
        did, dlo, dhi = pooled_interval(kth, g.score[firsts])
        out["did_pp"] = round(100 * did, 2)
        out["did_ci_pp"] = [round(100 * max(-1.0, dlo), 2), round(100 * min(1.0, dhi), 2)]
    return out


def encounter_table(data: TrainData) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Rows for k = 2..max encounters, and last-minus-first over tasks seen at least 3 times."""
    if not data.trajectories:
        return [], None
    g = encounter_groups(data)
    rows = []
    for k in range(2, int(g.rank.max()) + 2):
        at_k = np.flatnonzero(g.rank == k - 1)
        d = g.score[at_k] - g.score[g.first[at_k]]
        ok = ~np.isnan(d)
        if not ok.any():
            continue
        row = {"k": k, **paired_ci(d[ok])}
        row["first_pct"] = round(100 * float(g.score[g.first[at_k][ok]].mean()), 2)
        row["kth_pct"] = round(100 * float(g.score[at_k][ok].mean()), 2)
        row.update(_new_tasks(g, at_k, g.score[at_k][ok]))
        rows.append(row)
    # The last *graded* encounter: a run cut off mid-pass leaves ungraded final encounters.
    idx = np.where(np.isnan(g.score), -1, np.arange(len(g.task)))
    starts = np.flatnonzero(g.rank == 0)
    last_graded = np.maximum.reduceat(idx, starts)
    many = np.add.reduceat(~np.isnan(g.score), starts) >= 3
    d = g.score[last_graded[many]] - g.score[starts[many]]
    d = d[~np.isnan(d)]
    last = {"min_graded_encounters": 3, **paired_ci(d)} if len(d) else None
    return rows, last

"""Load a training run's trajectories as numpy columns with one SQL query (no dict per row).

This is what keeps `train report` fast on a million trajectories. The database groups identical
trajectories - same task, step, weight version, epoch and outcome class, as the G rollouts of one
group mostly are - so Python receives a few hundred thousand integer rows with a count `n`
instead of a million mixed tuples; every later statistic is a weighted numpy operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from trialbook.errors import TrialbookError
from trialbook.ledger import queries
from trialbook.ledger.queries import OUTCOME_LIST, OUTCOME_MASK, P2P, PARTIAL, REWARD_1, UNKNOWN_OUTCOME
from trialbook.ledger.store import Ledger
from trialbook.outcomes import GRADED

__all__ = ["OUTCOME_LIST", "TrainData", "load_durations", "load_trajectories"]

_OUTCOME_CODE = {name: i for i, name in enumerate(OUTCOME_LIST)}
_GRADED_CODES = np.array([name in GRADED for name in OUTCOME_LIST] + [False] * (16 - len(OUTCOME_LIST)))


@dataclass
class TrainData:
    """One row per group of identical trajectories (`n` of them); -1 marks a missing step/wv/epoch."""

    n: np.ndarray  # int64 trajectories the row stands for
    task: np.ndarray  # int32 code into task_names
    task_names: list[str]
    repo: np.ndarray  # int32 code into repo_names (a task's repo as first seen)
    repo_names: list[str]
    outcome: np.ndarray  # int8 code into OUTCOME_LIST
    graded: np.ndarray  # bool
    resolved: np.ndarray  # bool: graded and reward >= 1.0 (records.is_resolved)
    partial: np.ndarray  # bool: graded with 0 < reward < 1 (whatever the metric)
    wins: np.ndarray  # float64: the metric summed over the row's n graded trajectories (0 when ungraded)
    p2p: np.ndarray  # bool: graded and outcomes.p2p_regression(tests) (decided in SQL)
    step: np.ndarray  # int64
    wv: np.ndarray  # int64
    epoch: np.ndarray  # int64
    metric: str = "resolved"  # what `wins` sums: resolved trajectories, or rewards (stats.scores.METRICS)

    @property
    def trajectories(self) -> int:
        return int(self.n.sum())

    def count(self, mask: np.ndarray) -> int:
        return int(self.n[mask].sum())

    def subset(self, mask: np.ndarray) -> TrainData:
        arrays = {k: v[mask] for k, v in vars(self).items() if isinstance(v, np.ndarray)}
        return TrainData(task_names=self.task_names, repo_names=self.repo_names, metric=self.metric, **arrays)

    def score(self, mask: np.ndarray) -> float:
        """The metric summed over the masked rows' trajectories (resolved count or reward sum)."""
        return float(self.wins[mask].sum())

    def outcome_mask(self, name: str) -> np.ndarray:
        mask: np.ndarray = self.outcome == _OUTCOME_CODE[name]
        return mask


def load_trajectories(ledger: Ledger, run_id: int, metric: str = "resolved") -> TrainData:
    """`metric` resolved scores a graded trajectory 1 when resolved, else 0; reward scores its reward."""
    rewards = metric == "reward"
    tasks: dict[str, int] = {}
    task_repo: list[str] = []
    parts: list[np.ndarray] = []
    reward_parts: list[np.ndarray] = []
    for rows in queries.trajectory_groups(ledger, run_id, rewards=rewards):
        codes = np.empty(len(rows), dtype=np.int64)
        for k, (task_id, repo, *_) in enumerate(rows):
            code = tasks.get(task_id)
            if code is None:
                code = tasks[task_id] = len(tasks)
                task_repo.append(repo or "")
            codes[k] = code
        numbers = np.fromiter(chain.from_iterable(r[2:7] for r in rows), dtype=np.int64, count=5 * len(rows))
        parts.append(np.column_stack([codes, numbers.reshape(-1, 5)]))
        if rewards:
            reward_parts.append(np.fromiter((r[-1] for r in rows), dtype=np.float64, count=len(rows)))  # the sum
    cols = np.concatenate(parts) if parts else np.empty((0, 6), np.int64)
    repo_names = sorted(set(task_repo))
    repo_index = {r: k for k, r in enumerate(repo_names)}
    repo_of_task = np.array([repo_index[r] for r in task_repo] or [0], dtype=np.int32)
    task = cols[:, 0].astype(np.int32)
    flags = cols[:, 1]
    outcome = (flags & OUTCOME_MASK).astype(np.int8)
    if (outcome == UNKNOWN_OUTCOME).any():
        raise TrialbookError("the ledger holds an outcome this version of trialbook does not know")
    graded = _GRADED_CODES[outcome]
    resolved = graded & (flags & REWARD_1 > 0)
    n = cols[:, 5].copy()
    if rewards:
        wins = np.where(graded, np.concatenate(reward_parts) if reward_parts else np.empty(0), 0.0)
    else:
        wins = (n * resolved).astype(np.float64)
    return TrainData(
        n=n,
        task=task,
        task_names=list(tasks),
        repo=repo_of_task[task] if len(task) else np.empty(0, np.int32),
        repo_names=repo_names,
        outcome=outcome,
        graded=graded,
        resolved=resolved,
        partial=(flags & PARTIAL > 0) & graded,
        wins=wins,
        p2p=(flags & P2P > 0) & graded,
        step=cols[:, 2].copy(),
        wv=cols[:, 3].copy(),
        epoch=cols[:, 4].copy(),
        metric=metric,
    )


def load_durations(ledger: Ledger, run_id: int) -> np.ndarray:
    """Trajectory durations (seconds) of the run's current trials that have one."""
    return np.array(queries.durations(ledger, run_id), dtype=np.float64)

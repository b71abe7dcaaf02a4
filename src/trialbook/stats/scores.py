"""Per-task scores of a run, loaded with one GROUP BY query (no Python loop over trials).

A task's score is the mean of its graded attempts, counting an attempt as resolved when its
reward is 1.0 (outcomes.is_resolved). Ungraded attempts (verifier_timeout, infra_error,
incomplete) are counted but never enter the score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger import queries
from trialbook.ledger.store import Ledger


@dataclass(frozen=True)
class TaskScores:
    """One run's tasks, sorted by task id; arrays are aligned."""

    run: str
    task_ids: np.ndarray  # str
    repos: np.ndarray  # str ("unknown" when not known)
    trials: np.ndarray  # int: current trials of the task
    graded: np.ndarray  # int: graded attempts
    resolved: np.ndarray  # int: resolved graded attempts
    stack: dict
    labels: dict
    created: str

    @property
    def scored(self) -> np.ndarray:
        """Mask of tasks with at least one graded attempt."""
        return self.graded > 0

    @property
    def score(self) -> np.ndarray:
        """Mean of graded attempts per task (nan where none is graded)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.graded > 0, self.resolved / np.maximum(self.graded, 1), np.nan)

    def subset(self, mask: np.ndarray) -> TaskScores:
        return TaskScores(
            self.run, self.task_ids[mask], self.repos[mask], self.trials[mask], self.graded[mask],
            self.resolved[mask], self.stack, self.labels, self.created,
        )  # fmt: skip


def load_scores(ledger: Ledger, run_name: str) -> TaskScores:
    run = ledger.get_run(run_name)
    rows = queries.task_scores(ledger, run.id)
    if not rows:
        raise UserError(f"run '{run_name}' has no trials")
    ids, repos, n, g, r = zip(*rows, strict=True)
    return TaskScores(
        run=run_name,
        task_ids=np.array(ids, dtype=str),
        repos=np.array([x or "unknown" for x in repos], dtype=str),
        trials=np.array(n, dtype=np.int64),
        graded=np.array(g, dtype=np.int64),
        resolved=np.array(r, dtype=np.int64),
        stack=run.stack,
        labels=run.labels,
        created=run.created,
    )


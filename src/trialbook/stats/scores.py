"""Per-task scores of a run, loaded with one GROUP BY query (no Python loop over trials).

A task's score is the mean of its graded attempts under one of METRICS: `resolved` counts an attempt
as 1 when its reward is 1.0 (outcomes.is_resolved), else 0 (a partial reward of 0.5 counts 0);
`reward` takes the attempt's reward itself (a missing one counts 0). Ungraded attempts
(verifier_timeout, infra_error, incomplete) are counted but never enter the score, unless
`with_ungraded` counts them as failures or successes (the sensitivity bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger import reads
from trialbook.ledger.reads import RowSource

Metric = Literal["resolved", "reward"]
METRICS: tuple[str, ...] = ("resolved", "reward")


def check_metric(metric: str) -> Metric:
    if metric not in METRICS:
        raise UserError(f"--metric must be one of {', '.join(METRICS)}, not {metric!r}")
    return metric  # type: ignore[return-value]


@dataclass(frozen=True)
class TaskScores:
    """One run's tasks, sorted by task id; arrays are aligned."""

    run: str
    task_ids: np.ndarray  # str
    repos: np.ndarray  # str ("unknown" when not known)
    trials: np.ndarray  # int: current trials of the task
    graded: np.ndarray  # int: graded attempts
    resolved: np.ndarray  # int: resolved graded attempts
    stack: dict[str, Any]
    labels: dict[str, Any]
    created: str
    reward_sum: np.ndarray | None = None  # float: sum of graded attempts' rewards (None: as resolved)
    partial: np.ndarray | None = None  # int: graded attempts with 0 < reward < 1
    reward_sq: np.ndarray | None = None  # float: sum of graded attempts' squared rewards
    metric: Metric = "resolved"

    @property
    def scored(self) -> np.ndarray:
        """Mask of tasks with at least one graded attempt."""
        return self.graded > 0

    @property
    def score(self) -> np.ndarray:
        """Mean of graded attempts per task (nan where none is graded)."""
        top = self.successes
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.graded > 0, top / np.maximum(self.graded, 1), np.nan)

    @property
    def successes(self) -> np.ndarray:
        """Per task, the sum of graded attempts' values under the metric (resolved count or reward sum)."""
        if self.metric == "reward" and self.reward_sum is not None:
            return self.reward_sum
        return self.resolved

    @property
    def squares(self) -> np.ndarray:
        """Per task, the sum of squared attempt values under the metric (x^2 = x for resolved)."""
        if self.metric == "reward" and self.reward_sq is not None:
            return self.reward_sq
        return self.resolved

    @property
    def partial_count(self) -> int:
        return 0 if self.partial is None else int(self.partial.sum())

    def subset(self, mask: np.ndarray) -> TaskScores:
        return replace(
            self, task_ids=self.task_ids[mask], repos=self.repos[mask], trials=self.trials[mask],
            graded=self.graded[mask], resolved=self.resolved[mask],
            reward_sum=None if self.reward_sum is None else self.reward_sum[mask],
            partial=None if self.partial is None else self.partial[mask],
            reward_sq=None if self.reward_sq is None else self.reward_sq[mask],
        )  # fmt: skip

    def with_metric(self, metric: Metric) -> TaskScores:
        return replace(self, metric=metric)

    def with_ungraded(self, counted_as: Literal["failure", "success"]) -> TaskScores:
        """Every current trial graded: the ungraded ones count as failures (0) or successes (1)."""
        extra = self.trials - self.graded
        win = counted_as == "success"
        return replace(
            self, graded=self.trials.copy(), resolved=self.resolved + extra * win,
            reward_sum=None if self.reward_sum is None else self.reward_sum + extra * float(win),
            reward_sq=None if self.reward_sq is None else self.reward_sq + extra * float(win),
        )  # fmt: skip


def _score_rows(ledger: RowSource, run_id: int) -> Sequence[Sequence[Any]]:
    """The `task_scores` statement's rows as plain tuples. On a SQLite `store.Ledger`, through the engine's
    own sqlite3 connection with the statement's SQLite text (ledger/sqlite_reads.py): SQLAlchemy's result
    processing and typed rows cost ~3 s of a 100,000-task compare (benchmarks/README.md)."""
    engine = getattr(ledger, "engine", None)
    if getattr(ledger, "is_sqlite", False) and engine is not None:
        from trialbook.ledger.sqlite_reads import SQL

        sql, consts = SQL["task_scores"]
        with engine.connect() as conn:
            raw = conn.connection.driver_connection
            if raw is not None:
                rows: Sequence[Sequence[Any]] = raw.execute(sql, {**consts, "run_id": run_id}).fetchall()
                return rows
    return ledger.rows("task_scores", run_id=run_id)


def load_scores(ledger: RowSource, run_name: str, metric: str = "resolved") -> TaskScores:
    """One run's task scores; the columns are those of `reads.task_scores`, read without its row objects."""
    run = reads.get_run(ledger, run_name)
    rows = _score_rows(ledger, run.id)
    if not rows:
        raise UserError(f"run '{run_name}' has no trials")
    ids, repos, n, g, r, rs, p, sq = zip(*rows, strict=True)
    return TaskScores(
        run=run_name,
        task_ids=np.array(ids, dtype=str),
        repos=np.array([x or "unknown" for x in repos] if None in repos or "" in repos else repos, dtype=str),
        trials=np.array(n, dtype=np.int64),
        graded=np.array(g, dtype=np.int64),
        resolved=np.array(r, dtype=np.int64),
        stack=run.stack,
        labels=run.labels,
        created=run.created,
        reward_sum=np.array(rs, dtype=float),
        partial=np.array(p, dtype=np.int64),
        reward_sq=np.array(sq, dtype=float),
        metric=check_metric(metric),
    )

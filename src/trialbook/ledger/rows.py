"""Typed rows the ledger's reads return (reports index attributes, never string keys)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple


@dataclass
class RunRow:
    id: int
    name: str
    kind: str
    created: str
    config: dict[str, Any]
    stack: dict[str, Any]
    labels: dict[str, Any]
    source: str | None


class Counts(NamedTuple):
    """Current trials of a run (or of one repo of it): graded = judged; resolved = graded, reward >= 1.0."""

    tasks: int
    trials: int
    judged: int
    resolved: int
    reward_sum: float | None  # sum of graded trials' rewards (a missing reward counts 0)


class RunCounts(NamedTuple):
    name: str
    kind: str
    created: str
    counts: Counts


class RepoCounts(NamedTuple):
    repo: str | None
    trials: int
    judged: int
    resolved: int


@dataclass
class RunBreakdown:
    """What `show` reports about one run, from a handful of GROUP BY queries."""

    counts: Counts
    outcomes: dict[str, int]  # most frequent first
    by_repo: list[RepoCounts]  # by repo name
    exceptions: dict[str, int]  # exception / tag -> trials, most frequent first
    superseded: int
    max_attempt: int | None


class TaskScoreRow(NamedTuple):
    task_id: str
    repo: str | None
    trials: int
    graded: int
    resolved: int
    reward_sum: float  # graded attempts' rewards (a missing reward counts 0)
    partial: int  # graded attempts with a reward strictly between 0 and 1
    reward_sq: float  # sum of graded attempts' squared rewards (within-task variance)


class TaskLists(NamedTuple):
    repo: str | None
    fail_to_pass: list[str]
    pass_to_pass: list[str]


@dataclass
class StepRow:
    step: int
    started_at: datetime | None
    finished_at: datetime | None
    metrics: dict[str, float]


# One group of identical trajectories as `ledger.queries.trajectory_groups` yields it, straight off the
# DBAPI cursor (a million of them: no per-row object): task_id, repo, flags, step, wv, epoch, count
# (and, when asked for, the sum of the rows' rewards).
# flags = outcome code (low 4 bits) | REWARD_1 | P2P | PARTIAL, with -1 for a missing step / wv / epoch.
TrajectoryGroup = (
    tuple[str, str | None, int, int, int, int, int] | tuple[str, str | None, int, int, int, int, int, float]
)


@dataclass
class TrialRow:
    """One stored trial, JSON columns decoded."""

    id: int
    run_id: int
    task_id: str
    attempt: int
    repo: str | None
    outcome: str
    reward: float | None
    step: int | None
    wv: int | None
    epoch: int | None
    exception: str | None
    exception_message: str | None
    duration_s: float | None
    tokens: int | None
    turns: int | None
    tests: dict[str, dict[str, str]] | None
    started_at: str | None
    finished_at: str | None
    extra: dict[str, Any] | None
    superseded_by: int | None

"""Run summaries for `runs` and `show`, computed in SQL so they stay fast on million-trial runs.

Rates count the current (not superseded) graded trials; a graded trial is resolved when its
reward is 1.0 (outcomes.is_resolved), whatever its outcome. `ledger` is a `store.Ledger` or, for the
`runs`/`show` commands on a SQLite ledger, a `lite.LiteLedger`: neither SQLAlchemy nor numpy is
imported on that path, which keeps their start-up short
(tests/ledger/test_sqlite_reads.py::test_runs_and_show_import_neither_sqlalchemy_nor_numpy).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trialbook.ledger import reads
from trialbook.ledger.reads import RowSource
from trialbook.ledger.rows import Counts
from trialbook.result_types import Result, optional


def pct(part: float, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _mean_reward(c: Counts) -> float | None:
    return round(c.reward_sum / c.judged, 4) if c.judged and c.reward_sum is not None else None


@dataclass(frozen=True)
class RunListing(Result):
    """One line of `runs`."""

    name: str
    kind: str
    created: str
    tasks: int
    trials: int
    judged: int
    resolved: int
    resolved_pct: float | None
    mean_reward: float | None


@dataclass(frozen=True)
class Sensitivity(Result):
    """The resolved rate with the ungraded trials dropped / counted as failures / as successes."""

    dropped: float | None
    as_failures: float | None
    as_successes: float | None


@dataclass(frozen=True)
class RepoSummary(Result):
    trials: int
    judged: int
    resolved: int
    resolved_pct: float | None


@dataclass(frozen=True, kw_only=True)
class Cause(Result):
    """Why trials ended as they did: an exception kind and its message's first line, with how many trials."""

    exception: str
    cause: str
    trials: int


@dataclass(frozen=True, kw_only=True)
class RunSummary(RunListing):
    """What `show` reports about one run: its `runs` line, then the rest."""

    attempts_per_task: int | None
    pass_at_k: dict[str, float] | None = optional()  # runs with >= 2 attempts per task, on resolved attempts
    pass_at_k_tasks: dict[str, int] | None = optional()  # each k's subset: the tasks with >= k graded attempts
    graded_tasks: int | None = optional()  # tasks with >= 1 graded attempt (pass@k's whole)
    sensitivity: Sensitivity | None = optional()  # runs with ungraded trials
    outcomes: dict[str, int]
    by_repo: dict[str, RepoSummary]
    tags: dict[str, int]
    causes: list[Cause]  # the trials' exceptions by their first line (`trials RUN` has each trial's)
    superseded: int
    stack: dict[str, Any]
    labels: dict[str, Any]
    source: str | None


def runs_summary(ledger: RowSource) -> list[RunListing]:
    return [
        RunListing(
            name=r.name,
            kind=r.kind,
            created=r.created,
            tasks=r.counts.tasks,
            trials=r.counts.trials,
            judged=r.counts.judged,
            resolved=r.counts.resolved,
            resolved_pct=pct(r.counts.resolved, r.counts.judged),
            mean_reward=_mean_reward(r.counts),
        )  # fmt: skip
        for r in reads.runs_with_counts(ledger)
    ]


def run_summary(ledger: RowSource, name: str) -> RunSummary:
    run = reads.get_run(ledger, name)
    b = reads.run_breakdown(ledger, run.id)
    c = b.counts
    attempts = None if b.max_attempt is None else b.max_attempt + 1
    pass_at_k = pass_at_k_tasks = graded_tasks = None
    if attempts and attempts >= 2:
        from trialbook.stats.passk import run_pass_at_k

        scores = reads.task_scores(ledger, run.id)
        values, subsets = run_pass_at_k([t.graded for t in scores], [t.resolved for t in scores])
        if values:
            pass_at_k, pass_at_k_tasks = values, subsets
            graded_tasks = sum(t.graded > 0 for t in scores)
    sensitivity = None
    if c.trials > c.judged:  # the rate's bounds when the ungraded trials count as failures / successes
        sensitivity = Sensitivity(
            dropped=pct(c.resolved, c.judged),
            as_failures=pct(c.resolved, c.trials),
            as_successes=pct(c.resolved + c.trials - c.judged, c.trials),
        )
    return RunSummary(
        name=run.name, kind=run.kind, created=run.created, tasks=c.tasks, trials=c.trials, judged=c.judged,
        resolved=c.resolved, resolved_pct=pct(c.resolved, c.judged), mean_reward=_mean_reward(c),
        attempts_per_task=attempts, pass_at_k=pass_at_k, pass_at_k_tasks=pass_at_k_tasks, graded_tasks=graded_tasks,
        sensitivity=sensitivity, outcomes=b.outcomes,
        by_repo={
            (r.repo or "unknown"): RepoSummary(r.trials, r.judged, r.resolved, pct(r.resolved, r.judged))
            for r in b.by_repo
        },
        tags=b.exceptions,
        causes=[Cause(exception=e, cause=c, trials=n) for e, c, n in reads.run_causes(ledger, run.id)],
        superseded=b.superseded, stack=run.stack, labels=run.labels, source=run.source,
    )  # fmt: skip

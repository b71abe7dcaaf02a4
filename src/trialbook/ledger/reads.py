"""The reads behind `runs` and `show`: the named statements of ledger/statements.py, their rows typed.

A source is anything with `rows(name, **params)` running the named statement: a `store.Ledger`
(through SQLAlchemy) or a `lite.LiteLedger` (stdlib sqlite3). This module imports neither, so the
`runs`/`show` start-up pays for neither SQLAlchemy nor its dialects on a SQLite ledger.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol

from trialbook.errors import UserError
from trialbook.ledger.rows import Counts, RepoCounts, RunBreakdown, RunCounts, RunRow, TaskScoreRow
from trialbook.outcomes import FINDINGS


class RowSource(Protocol):
    def rows(self, statement: str, /, **params: Any) -> Sequence[Sequence[Any]]: ...


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def as_counts(row: Sequence[Any]) -> Counts:
    tasks_, n, judged, resolved, reward_sum = row
    return Counts(int(tasks_), int(n), int(judged), int(resolved), None if reward_sum is None else float(reward_sum))


def get_run(src: RowSource, name: str) -> RunRow:
    found = src.rows("run_by_name", name=name)
    if not found:
        raise UserError(f"no run named '{name}' (see `trialbook runs`)")
    id_, name_, kind, created, config, stack, labels, source = found[0]
    return RunRow(
        id=id_, name=name_, kind=kind, created=created, config=loads(config) or {},
        stack=loads(stack) or {}, labels=loads(labels) or {}, source=source,
    )  # fmt: skip


def runs_with_counts(src: RowSource) -> list[RunCounts]:
    """Every run (in creation order) with the counts of its current trials."""
    return [RunCounts(r[0], r[1], r[2], as_counts(r[3:])) for r in src.rows("runs_with_counts")]


def run_breakdown(src: RowSource, run_id: int) -> RunBreakdown:
    outcomes = src.rows("run_outcomes", run_id=run_id)
    max_attempt = src.rows("run_max_attempt", run_id=run_id)[0][0]
    return RunBreakdown(
        counts=as_counts(src.rows("run_counts", run_id=run_id)[0]),
        outcomes={k: int(v) for k, v in sorted(outcomes, key=lambda kv: -kv[1])},
        by_repo=[RepoCounts(repo, int(n), int(j), int(r)) for repo, n, j, r in src.rows("run_repos", run_id=run_id)],
        exceptions={k: int(v) for k, v in src.rows("run_exceptions", run_id=run_id)},
        superseded=int(src.rows("run_superseded", run_id=run_id)[0][0]),
        max_attempt=None if max_attempt is None else int(max_attempt),
    )


def cause(exception: str | None, message: str | None) -> str | None:
    """The first line of an exception's message (a finding's is its meaning: `show` counts those)."""
    if not exception or exception in FINDINGS or not message:
        return None
    return (message.strip().splitlines() or [""])[0][:300] or None


def run_causes(src: RowSource, run_id: int) -> list[tuple[str, str, int]]:
    """(exception, cause, trials) of the run's current trials that ended with an exception, most trials first."""
    counted: dict[tuple[str, str], int] = {}
    for exception, message, n in src.rows("run_causes", run_id=run_id):
        line = cause(exception, message)
        if line is not None:
            counted[exception, line] = counted.get((exception, line), 0) + int(n)
    return [(e, c, n) for (e, c), n in sorted(counted.items(), key=lambda kv: (-kv[1], kv[0]))]


def task_scores(src: RowSource, run_id: int) -> list[TaskScoreRow]:
    """Per task (sorted by id): current trials, graded attempts, resolved graded attempts, the sum of
    graded rewards, the count of graded partial rewards (0 < reward < 1) and the sum of squared rewards."""
    return [
        TaskScoreRow(t, repo, int(n), int(g), int(r), float(rs), int(p), float(sq))
        for t, repo, n, g, r, rs, p, sq in src.rows("task_scores", run_id=run_id)
    ]

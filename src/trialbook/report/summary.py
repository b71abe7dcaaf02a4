"""Run summaries for `runs` and `show`, computed in SQL so they stay fast on million-trial runs.

Rates count the current (not superseded) graded trials; a graded trial is resolved when its
reward is 1.0 (records.is_resolved), whatever its outcome.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, and_, case, cast, distinct, func, select

from trialbook.ledger.schema import runs, trials
from trialbook.ledger.store import Ledger
from trialbook.records import GRADED

_current = trials.c.superseded_by.is_(None)
_graded = trials.c.outcome.in_(sorted(GRADED))
_resolved = and_(_graded, trials.c.reward >= 1.0)


def _counts() -> list[Any]:
    return [
        func.count(distinct(trials.c.task_id)).label("tasks"),
        func.count(trials.c.id).label("trials"),
        func.coalesce(func.sum(cast(case((_graded, 1), else_=0), Integer)), 0).label("judged"),
        func.coalesce(func.sum(cast(case((_resolved, 1), else_=0), Integer)), 0).label("resolved"),
        func.sum(case((_graded, func.coalesce(trials.c.reward, 0.0)), else_=None)).label("reward_sum"),
    ]


def pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _finish(row: dict[str, Any]) -> dict[str, Any]:
    judged = row["judged"]
    row["resolved_pct"] = pct(row["resolved"], judged)
    reward_sum = row.pop("reward_sum")
    row["mean_reward"] = round(reward_sum / judged, 4) if judged and reward_sum is not None else None
    return row


def runs_summary(ledger: Ledger) -> list[dict[str, Any]]:
    q = (
        select(runs.c.name, runs.c.kind, runs.c.created, *_counts())
        .select_from(runs.outerjoin(trials, and_(trials.c.run_id == runs.c.id, _current)))
        .group_by(runs.c.id, runs.c.name, runs.c.kind, runs.c.created)
        .order_by(runs.c.id)
    )
    with ledger.engine.connect() as conn:
        return [_finish(dict(r)) for r in conn.execute(q).mappings()]


def run_summary(ledger: Ledger, name: str) -> dict[str, Any]:
    run = ledger.run(name)
    mine = and_(trials.c.run_id == run["id"], _current)
    with ledger.engine.connect() as conn:
        totals = dict(conn.execute(select(*_counts()).where(mine)).mappings().one())
        outcomes = dict(
            conn.execute(select(trials.c.outcome, func.count()).where(mine).group_by(trials.c.outcome)).all()
        )
        repo_rows = conn.execute(
            select(
                trials.c.repo,
                func.count(),
                func.coalesce(func.sum(cast(case((_graded, 1), else_=0), Integer)), 0),
                func.coalesce(func.sum(cast(case((_resolved, 1), else_=0), Integer)), 0),
            )
            .where(mine)
            .group_by(trials.c.repo)
            .order_by(trials.c.repo)
        ).all()
        tags = dict(
            conn.execute(
                select(trials.c.exception, func.count())
                .where(mine, trials.c.exception.is_not(None))
                .group_by(trials.c.exception)
                .order_by(func.count().desc())
            ).all()
        )
        superseded = conn.execute(
            select(func.count()).where(trials.c.run_id == run["id"], trials.c.superseded_by.is_not(None))
        ).scalar_one()
        max_attempts = conn.execute(select(func.max(trials.c.attempt)).where(mine)).scalar()
    out: dict[str, Any] = {"name": run["name"], "kind": run["kind"], "created": run["created"]}
    out.update(_finish(totals))
    out["attempts_per_task"] = None if max_attempts is None else int(max_attempts) + 1
    if out["attempts_per_task"] and out["attempts_per_task"] >= 2:
        from trialbook.stats.passk import run_pass_at_k
        from trialbook.stats.scores import load_scores

        pass_at_k = run_pass_at_k(load_scores(ledger, name))
        if pass_at_k:
            out["pass_at_k"] = pass_at_k
    out["outcomes"] = {k: int(v) for k, v in sorted(outcomes.items(), key=lambda kv: -kv[1])}
    out["by_repo"] = {
        (repo or "unknown"): {
            "trials": int(n),
            "judged": int(j),
            "resolved": int(r),
            "resolved_pct": pct(int(r), int(j)),
        }
        for repo, n, j, r in repo_rows
    }
    out["tags"] = {k: int(v) for k, v in tags.items()}
    out["superseded"] = int(superseded)
    out["stack"] = run["stack"]
    out["labels"] = run["labels"]
    out["source"] = run["source"]
    return out

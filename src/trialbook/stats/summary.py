"""Run summaries for `runs` and `show`, computed in SQL so they stay fast on million-trial runs.

Rates count the current (not superseded) graded trials; a graded trial is resolved when its
reward is 1.0 (outcomes.is_resolved), whatever its outcome.
"""

from __future__ import annotations

from typing import Any

from trialbook.ledger import queries
from trialbook.ledger.rows import Counts
from trialbook.ledger.store import Ledger


def pct(part: int, whole: int) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def _counts(c: Counts) -> dict[str, Any]:
    return {
        "tasks": c.tasks,
        "trials": c.trials,
        "judged": c.judged,
        "resolved": c.resolved,
        "resolved_pct": pct(c.resolved, c.judged),
        "mean_reward": round(c.reward_sum / c.judged, 4) if c.judged and c.reward_sum is not None else None,
    }


def runs_summary(ledger: Ledger) -> list[dict[str, Any]]:
    rows = queries.runs_with_counts(ledger)
    return [{"name": r.name, "kind": r.kind, "created": r.created, **_counts(r.counts)} for r in rows]


def run_summary(ledger: Ledger, name: str) -> dict[str, Any]:
    run = ledger.get_run(name)
    b = queries.run_breakdown(ledger, run.id)
    out: dict[str, Any] = {"name": run.name, "kind": run.kind, "created": run.created}
    out.update(_counts(b.counts))
    out["attempts_per_task"] = None if b.max_attempt is None else b.max_attempt + 1
    if out["attempts_per_task"] and out["attempts_per_task"] >= 2:
        from trialbook.stats.passk import run_pass_at_k
        from trialbook.stats.scores import load_scores

        pass_at_k = run_pass_at_k(load_scores(ledger, name))
        if pass_at_k:
            out["pass_at_k"] = pass_at_k
    c = b.counts
    if c.trials > c.judged:  # the rate's bounds when the ungraded trials count as failures / successes
        out["sensitivity"] = {
            "dropped": pct(c.resolved, c.judged),
            "as_failures": pct(c.resolved, c.trials),
            "as_successes": pct(c.resolved + c.trials - c.judged, c.trials),
        }
    out["outcomes"] = b.outcomes
    out["by_repo"] = {
        (r.repo or "unknown"): {
            "trials": r.trials,
            "judged": r.judged,
            "resolved": r.resolved,
            "resolved_pct": pct(r.resolved, r.judged),
        }
        for r in b.by_repo
    }
    out["tags"] = b.exceptions
    out["superseded"] = b.superseded
    out["stack"] = run.stack
    out["labels"] = run.labels
    out["source"] = run.source
    return out

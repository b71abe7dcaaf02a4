"""Preregistered plans kept in the ledger: the registered content of each plan and the log of every
check made against it (tables `plans` and `plan_checks`, schema v3). Typed rows; no SQL elsewhere."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, select

from trialbook.ledger.schema import plan_checks, plans
from trialbook.ledger.store import Ledger


@dataclass(frozen=True)
class PlanRow:
    hash: str
    content: str  # canonical JSON of the plan as written by `prereg init`
    registered: str  # UTC ISO time the ledger recorded it (not the plan's own `created`)


@dataclass(frozen=True)
class PlanCheckRow:
    plan_hash: str
    checked_at: str
    base: str
    candidates: list[str]
    result: dict[str, Any]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def register_plan(ledger: Ledger, conn: Connection, plan_hash: str, content: str) -> PlanRow:
    """Record a plan inside the caller's transaction (the caller writes the file in the same one); the same
    plan written twice (same content, so same hash) keeps its first record."""
    old = conn.execute(select(plans).where(plans.c.hash == plan_hash)).first()
    if old is not None and old.content == content:
        return PlanRow(old.hash, old.content, old.registered)
    row = PlanRow(plan_hash, content, now())
    conn.execute(plans.insert().values(hash=row.hash, content=row.content, registered=row.registered))
    return row


def get_plan(ledger: Ledger, plan_hash: str) -> PlanRow | None:
    with ledger.engine.connect() as conn:
        r = conn.execute(select(plans).where(plans.c.hash == plan_hash)).first()
    return None if r is None else PlanRow(r.hash, r.content, r.registered)


def log_check(ledger: Ledger, plan_hash: str, base: str, candidates: list[str], result: dict[str, Any]) -> None:
    with ledger.transaction() as conn:
        conn.execute(
            plan_checks.insert().values(
                plan_hash=plan_hash,
                checked_at=now(),
                base=base,
                candidates=json.dumps(candidates),
                result=json.dumps(result, sort_keys=True, default=str),
            )  # fmt: skip
        )


def checks(ledger: Ledger, plan_hash: str) -> list[PlanCheckRow]:
    """Every logged check of a plan, oldest first."""
    q = select(plan_checks).where(plan_checks.c.plan_hash == plan_hash).order_by(plan_checks.c.id)
    with ledger.engine.connect() as conn:
        return [
            PlanCheckRow(r.plan_hash, r.checked_at, r.base, json.loads(r.candidates), json.loads(r.result))
            for r in conn.execute(q)
        ]


def referenced_runs(conn: Connection) -> set[str]:
    """Run names any logged plan check used (as baseline or candidate)."""
    out: set[str] = set()
    for base, cands in conn.execute(select(plan_checks.c.base, plan_checks.c.candidates)):
        out.add(base)
        out.update(json.loads(cands))
    return out


def rename_references(conn: Connection, old: str, new: str) -> None:
    """Point logged checks at a run's new name (a forced rename keeps the log truthful)."""
    for cid, base, cands in conn.execute(select(plan_checks.c.id, plan_checks.c.base, plan_checks.c.candidates)):
        names = json.loads(cands)
        if base == old or old in names:
            conn.execute(
                plan_checks.update().where(plan_checks.c.id == cid).values(
                    base=new if base == old else base, candidates=json.dumps([new if n == old else n for n in names])
                )
            )  # fmt: skip

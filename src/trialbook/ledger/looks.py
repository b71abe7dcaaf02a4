"""The looks table (schema v6): every verdict `compare` and `prereg check` printed, by family. Typed rows;
no SQL elsewhere. stats/looks.py decides what they mean."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from trialbook.ledger.schema import looks
from trialbook.ledger.store import Ledger


@dataclass(frozen=True)
class LookRow:
    family: str
    baseline: str
    candidate: str
    tasks_sha: str  # the comparison's key (stats.looks.comparison_key: both runs' content and the tasks)
    tasks: int
    source: str
    diff_pp: float | None
    p_value: float | None
    claim: bool
    at: str


def family_looks(ledger: Ledger, family: str) -> list[LookRow]:
    """The family's looks, oldest first (a reset row, written before looks were keyed by content, ends the
    looks before it)."""
    q = select(looks).where(looks.c.family == family).order_by(looks.c.id)
    with ledger.engine.connect() as conn:
        rows = list(conn.execute(q))
    out: list[LookRow] = []
    for r in rows:
        if r.candidate is None:  # a reset
            out = []
            continue
        out.append(LookRow(r.family, r.baseline, r.candidate, r.tasks_sha, r.tasks, r.source, r.diff_pp,
                           r.p_value, bool(r.claim), r.at))  # fmt: skip
    return out


def record(ledger: Ledger, rows: list[LookRow]) -> None:
    """One transaction for the looks of one command."""
    with ledger.transaction() as conn:
        for r in rows:
            conn.execute(looks.insert().values(
                family=r.family, baseline=r.baseline, candidate=r.candidate, tasks_sha=r.tasks_sha, tasks=r.tasks,
                source=r.source, diff_pp=r.diff_pp, p_value=r.p_value, claim=int(r.claim), at=r.at,
            ))  # fmt: skip


def count(ledger: Ledger) -> int:
    """How many looks the ledger holds (the web page's cache key: a new look changes what it shows)."""
    from sqlalchemy import func

    with ledger.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(looks)).scalar_one())

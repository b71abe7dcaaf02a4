"""The share of a training run's trajectories whose change shows a reward-hacking signature (verify/hacks.py), or whose
commands reach for the answer (verify/leak_moves.py), by weight-version bucket: the team sees a policy learning to hack
as it learns to pass."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import and_, func, or_, select

from trialbook.extra_schema import read_extra
from trialbook.ledger import statements
from trialbook.ledger.schema import trials
from trialbook.ledger.store import Ledger
from trialbook.rewards import HACK_PREFIX, LEAK_PREFIX
from trialbook.verify.hacks import HACKS
from trialbook.verify.leak_moves import LEAK_MOVES

NAMES = tuple(h.name for h in HACKS) + tuple(m.name for m in LEAK_MOVES)


def hack_table(ledger: Ledger, run_id: int, bucket: int) -> list[dict[str, object]] | None:
    """Per bucket of `bucket` weight versions: trajectories, and per signature the % of them carrying it; None when
    no trajectory of the run carries one (the report then shows nothing)."""
    c = trials.c
    base = and_(c.run_id == run_id, statements.current, c.wv.is_not(None))
    with ledger.engine.connect() as conn:
        totals: Counter[int] = Counter()
        for wv, n in conn.execute(select(c.wv, func.count()).where(base).group_by(c.wv)):
            totals[int(wv) // bucket] += int(n)
        hits: dict[int, Counter[str]] = {}
        tagged = or_(c.extra.like(f'%"{HACK_PREFIX}%'), c.extra.like(f'%"{LEAK_PREFIX}%'))
        for wv, extra in conn.execute(select(c.wv, c.extra).where(base, tagged)):
            for tag in set(read_extra(extra).tags):
                if tag.startswith((HACK_PREFIX, LEAK_PREFIX)):
                    hits.setdefault(int(wv) // bucket, Counter())[tag] += 1
    if not hits:
        return None
    rows = []
    for b in sorted(set(totals)):
        n = totals[b]
        shares = {name: round(100.0 * hits.get(b, Counter())[name] / n, 2) if n else None for name in NAMES}
        rows.append({"wv_from": b * bucket, "wv_to": b * bucket + bucket - 1, "trajectories": n, "pct": shares})
    return rows

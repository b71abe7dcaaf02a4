"""Looks are remembered: every verdict `compare` prints joins a family (the baseline's, or one named with
`--family`), and a later look is judged as one of all the family's comparisons so far.

A comparison is one (candidate, paired task set): the same candidate on the same tasks compared again is
the same comparison, not a new one. With N distinct comparisons in the family, each is judged by
Bonferroni over N (CI level 1 - 0.05/N, p x N; Dunn 1961, "Multiple comparisons among means", JASA
56:52-64), which holds the family-wise false-claim rate at 5% for any dependence between the looks; the
earlier looks' verdicts are re-judged at the same level and the ones that no longer hold are named
("revised"). A verdict is therefore final only once the family is: name the family before the first look
and reset it (`--reset-family`) only for a new experiment. Checked by simulation in
tests/stats/test_looks.py (8 null checkpoints of one arm, compared one call at a time: 5% family-wise).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from trialbook.ledger import looks as ledger_looks
from trialbook.ledger.plans import now
from trialbook.ledger.store import Ledger
from trialbook.stats.comparison import CompareResult, LookReport

ALPHA = 0.05


def holds(diff_pp: float | None, p: float | None, n: int, min_diff: float) -> bool:
    """The claim rule at Bonferroni over n comparisons, from a look's stored difference and p."""
    return bool(diff_pp is not None and p is not None and diff_pp >= min_diff and diff_pp > 0 and p * n < ALPHA)


def apply(
    ledger: Ledger, res: CompareResult, family: str | None, rerun: Callable[[int], CompareResult],
    source: str = "compare", reset: bool = False,
) -> CompareResult:  # fmt: skip
    """Record this call's verdicts in the family and, when it has earlier comparisons, re-judge (rerun with
    picked_from = N) and report them."""
    fam = family or f"baseline:{res.baseline}"
    if reset:
        ledger_looks.reset(ledger, fam, res.baseline)
    earlier = ledger_looks.family_looks(ledger, fam)
    rows = [r for r in res.comparisons if r.subset == "all"]
    seen = {(r.candidate, r.tasks_sha): r for r in earlier}
    keys = list(seen) + [(r.candidate, r.tasks_sha) for r in rows if (r.candidate, r.tasks_sha) not in seen]
    n = len(keys)
    unadjusted = {r.candidate: r.claim for r in rows}
    subsets = len({r.subset for r in res.comparisons}) or 1  # --split: compare multiplies by its 3 rows
    if n > res.candidates_considered // subsets:
        res = rerun(n)
        rows = [r for r in res.comparisons if r.subset == "all"]
    current = {(r.candidate, r.tasks_sha) for r in rows}
    revised = [
        f"{r.candidate} on {r.tasks} tasks ({r.source}, {r.at[:16].replace('T', ' ')})"
        for key, r in seen.items()
        if key not in current and r.claim and not holds(r.diff_pp, r.p_value, n, res.min_diff_pp)
    ]
    level = float(np.round(1 - ALPHA / max(n * subsets, res.candidates_considered), 6))
    report = LookReport(family=fam, look=n, level=level, unadjusted=unadjusted, revised=revised)
    if getattr(ledger, "read_only", None):  # a read-only ledger is read, never written
        if all(key in seen for key in current):  # nothing new to keep: the family already holds this look
            return replace(res, looks=report)
        note = f"this look is not recorded: the ledger is {ledger.read_only}"
        return replace(res, looks=report, warnings=[*res.warnings, note])
    at = now()
    ledger_looks.record(ledger, [
        ledger_looks.LookRow(fam, res.baseline, r.candidate, r.tasks_sha or "", r.tasks_paired, source, r.diff_pp,
                             r.p_value, r.claim, at)
        for r in rows
    ])  # fmt: skip
    return replace(res, looks=report)

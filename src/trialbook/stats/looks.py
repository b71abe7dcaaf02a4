"""Looks that cannot be dodged: online alpha-spending over a family of comparisons keyed by content.

A comparison is what was measured, not what it is called: the baseline's and the candidate's content
(`stats.compare.content_sha`: sha256 of each run's task ids, graded attempts and task scores) and the paired
task set. A family is, by default, every comparison against one baseline content (`content:<sha>`), so a
renamed, copied or re-imported baseline or candidate is the same family and the same comparison, and a
checkpoint re-run under its old name with `--replace` is a new comparison. `--family NAME` names a family
(an experiment across baselines); `--family none` gives the comparison alone, labelled as such.

The j-th distinct comparison of a family spends alpha x 1/(j(j+1)) of the family's alpha = 0.05, and is
judged alone at that level: 97.5% for the first look, 99.17% for the second, 99.58% for the third, ...
99.93% for the eighth. The shares sum to 1 (1/(j(j+1)) = 1/j - 1/(j+1)), so by Bonferroni's inequality the
probability that any look of the family claims falsely is at most alpha, whatever the looks' dependence, their
number and the order they come in: the online Bonferroni rule, an alpha-spending sequence fixed in advance
(Tian & Ramdas 2021, "Online control of the familywise error rate", Stat Methods Med Res 30:976-993; Foster &
Stine 2008, J R Stat Soc B 70:429-444, for alpha-investing, its generalisation). A look's number is fixed when
it is first recorded, so its verdict is final: asking the same comparison again prints the same numbers, an
unrelated comparison in between changes nothing, and nothing is re-judged later. A read-only ledger and the
web page record nothing: they show a recorded comparison's look as recorded, and a new one as the look it
would be, saying so.

Checked through the CLI in tests/stats/test_looks.py (8 null checkpoints under each dodge: fresh name,
rename, copy, --replace) and, larger, benchmarks/bench_looks.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import replace

from trialbook.errors import UserError
from trialbook.ledger import looks as ledger_looks
from trialbook.ledger.plans import now
from trialbook.ledger.store import Ledger
from trialbook.stats.comparison import CompareResult, LookReport

ALPHA = 0.05
ALONE = "none"  # --family none: the comparison alone, no family


def share(j: int) -> float:
    """The share of the family's alpha that its j-th look spends (j >= 1); the shares sum to 1."""
    return 1.0 / (j * (j + 1))


def comparison_key(base_sha: str, cand_sha: str, tasks_sha: str) -> str:
    """One comparison: both runs' content and the paired tasks (stored in the looks table's tasks_sha)."""
    return hashlib.sha256(f"{base_sha}\n{cand_sha}\n{tasks_sha}".encode()).hexdigest()


def family_name(res: CompareResult, family: str | None) -> str:
    if family is not None and not family.strip():
        raise UserError("--family needs a name (or 'none' for the comparison alone)")
    if family:
        return family.strip()
    return f"content:{(res.content or {})[res.baseline][:16]}"


def apply(
    ledger: Ledger, res: CompareResult, family: str | None, rerun: Callable[[dict[str, float]], CompareResult],
    source: str = "compare", record: bool = True,
) -> CompareResult:  # fmt: skip
    """Number this call's comparisons in their family (new ones after the family's earlier looks, in the order
    given), judge each at its look's share of alpha (rerun with shares), and record the new ones unless
    `record` is False or the ledger is read-only. `res` is the call's comparison alone."""
    unadjusted = {r.candidate: r.claim for r in res.comparisons if r.subset == "all"}
    if family is not None and family.strip().lower() == ALONE:
        return replace(res, looks=LookReport(None, {}, {}, unadjusted, recorded=False))
    fam = family_name(res, family)
    content = res.content or {}
    keys = {
        r.candidate: comparison_key(content[res.baseline], content[r.candidate], r.tasks_sha or "")
        for r in res.comparisons
        if r.subset == "all"
    }
    numbers: dict[str, int] = {}
    for row in ledger_looks.family_looks(ledger, fam):
        numbers.setdefault(row.tasks_sha, len(numbers) + 1)
    known = dict(numbers)
    for key in keys.values():
        numbers.setdefault(key, len(numbers) + 1)
    look = {cand: numbers[key] for cand, key in keys.items()}
    judged = rerun({cand: share(j) for cand, j in look.items()})
    rows = [r for r in judged.comparisons if r.subset == "all"]
    level = {r.candidate: r.ci_level for r in rows}
    new = [r for r in rows if keys[r.candidate] not in known]
    read_only = getattr(ledger, "read_only", None)
    report = LookReport(fam, look, level, unadjusted, recorded=not new or (record and not read_only))
    warnings = list(judged.warnings)
    if new and not report.recorded:
        why = f"the ledger is {read_only}" if read_only else "this view records nothing"
        warnings.append(f"look(s) {', '.join(str(look[r.candidate]) for r in new)} not recorded: {why}")
    if new and report.recorded:
        at = now()
        ledger_looks.record(ledger, [
            ledger_looks.LookRow(fam, res.baseline, r.candidate, keys[r.candidate], r.tasks_paired, source,
                                 r.diff_pp, r.p_value, r.claim, at)
            for r in new
        ])  # fmt: skip
    return replace(judged, looks=report, warnings=warnings)

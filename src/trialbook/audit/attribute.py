"""`attribute OLD NEW`: where a change in resolved rate came from, in points that add up exactly.

Trials are paired on (task_id, attempt) between the two runs. Each pair moves from an old state to
a new state, a state being `resolved` (graded with reward 1.0, whatever the outcome) or the trial's
outcome otherwise. A pair that went unresolved -> resolved adds 100/N points, the reverse takes
100/N away; the parts are the sums by transition and by repo. A new trial that replaced an older
one in its run (`rerun`) gets its own line, with the timeout multiplier when the trial records one.

`RUN@original` names a run as it was before any rerun (the first trial of each attempt), so
`attribute base@original base` isolates what a `rerun --timeout-multiplier 2` changed.

Points are rounded to 0.01 by largest remainder so the rounded parts sum exactly to the rounded
total; the exact integer `net` counts (resolved gained minus lost) sum exactly to the total's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from trialbook.errors import UserError
from trialbook.extra_schema import read_extra
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import is_resolved
from trialbook.result_types import Result, renamed

ORIGINAL = "@original"


@dataclass(frozen=True, kw_only=True)
class Transition(Result):
    """Pairs that moved from one state to another (`via` a rerun, when the new trial replaced one)."""

    from_: str = renamed("from")
    to: str
    via: str | None
    tasks: int
    net: int  # resolved gained minus lost
    pp: float


@dataclass(frozen=True)
class RepoChange(Result):
    tasks: int
    net: int
    pp: float


@dataclass(frozen=True, kw_only=True)
class Attribution(Result):
    old: str
    new: str
    pairs: int
    unpaired_old: int
    unpaired_new: int
    old_pct: float
    new_pct: float
    total_pp: float
    net: int
    unchanged: int
    parts: list[Transition]
    by_repo: dict[str, RepoChange]


def _state(trial: TrialRow) -> str:
    return "resolved" if is_resolved(trial.outcome, trial.reward) else trial.outcome


def _via(trial: TrialRow, replaced: bool) -> str | None:
    if not replaced:
        return None
    mult = read_extra(trial).timeout_multiplier
    return f"rerun x{mult:g}" if mult is not None else "rerun"


def load_trials(ledger: Ledger, spec: str) -> tuple[str, dict[tuple[str, int], tuple[TrialRow, bool]]]:
    """(task_id, attempt) -> (trial, replaced_another) for `RUN` or `RUN@original`."""
    name, original = (spec[: -len(ORIGINAL)], True) if spec.endswith(ORIGINAL) else (spec, False)
    every = list(ledger.trial_rows(ledger.get_run(name).id, current_only=False))
    replacements = {t.superseded_by for t in every if t.superseded_by is not None}
    out: dict[tuple[str, int], tuple[TrialRow, bool]] = {}
    for t in every:
        key = (t.task_id, t.attempt)
        if original:
            if t.id not in replacements and key not in out:  # the first of its chain
                out[key] = (t, False)
        elif t.superseded_by is None:
            out[key] = (t, t.id in replacements)
    return spec, out


def _round_half_up(value: Fraction, unit: Fraction) -> int:
    return math.floor(value / unit + Fraction(1, 2))


def apportion(exact: dict[Any, Fraction], total: Fraction, unit: Fraction = Fraction(1, 100)) -> dict[Any, float]:
    """Round each value to `unit` so the rounded values sum exactly to the rounded total."""
    target = _round_half_up(total, unit)
    floors = {k: math.floor(v / unit) for k, v in exact.items()}
    remainder = target - sum(floors.values())
    order = sorted(exact, key=lambda k: exact[k] / unit - floors[k], reverse=True)
    for k in order[: max(remainder, 0)]:
        floors[k] += 1
    return {k: float(n * unit) for k, n in floors.items()}


def attribute_runs(ledger: Ledger, old: str, new: str) -> Attribution:
    old_name, before = load_trials(ledger, old)
    new_name, after = load_trials(ledger, new)
    keys = sorted(set(before) & set(after))
    if not keys:
        raise UserError(f"runs '{old}' and '{new}' share no (task, attempt) pairs to attribute")
    n = len(keys)
    parts: dict[tuple[str, str, str | None], list[int]] = defaultdict(lambda: [0, 0])  # [pairs, net]
    repos: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    unchanged = 0
    resolved_old = resolved_new = 0
    for key in keys:
        (t_old, _), (t_new, replaced) = before[key], after[key]
        s_old, s_new = _state(t_old), _state(t_new)
        gain = (s_new == "resolved") - (s_old == "resolved")
        resolved_old += s_old == "resolved"
        resolved_new += s_new == "resolved"
        repo = repos[t_new.repo or t_old.repo or "?"]
        repo[0] += 1
        repo[1] += gain
        if s_old == s_new:
            unchanged += 1
            continue
        cell = parts[(s_old, s_new, _via(t_new, replaced))]
        cell[0] += 1
        cell[1] += gain
    total = Fraction(100 * (resolved_new - resolved_old), n)
    part_pp = apportion({k: Fraction(100 * v[1], n) for k, v in parts.items()}, total)
    repo_pp = apportion({k: Fraction(100 * v[1], n) for k, v in repos.items()}, total)
    total_pp = float(Fraction(_round_half_up(total, Fraction(1, 100)), 100))
    rows = [Transition(from_=k[0], to=k[1], via=k[2], tasks=v[0], net=v[1], pp=part_pp[k]) for k, v in parts.items()]
    rows.sort(key=lambda r: (-abs(r.pp), -r.tasks, r.from_, r.to))
    return Attribution(
        old=old_name, new=new_name, pairs=n, unpaired_old=len(before) - n, unpaired_new=len(after) - n,
        old_pct=round(100 * resolved_old / n, 2), new_pct=round(100 * resolved_new / n, 2), total_pp=total_pp,
        net=resolved_new - resolved_old, unchanged=unchanged, parts=rows,
        by_repo={
            k: RepoChange(tasks=v[0], net=v[1], pp=repo_pp[k])
            for k, v in sorted(repos.items(), key=lambda kv: (-abs(kv[1][1]), kv[0]))
        },
    )  # fmt: skip

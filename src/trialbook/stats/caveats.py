"""The warnings a careful reviewer gives under a comparison. Thresholds live in this one table."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from trialbook.stats.kernel import FEW_TASKS
from trialbook.stats.scores import TaskScores

# Stack fields whose difference most often explains a "gain" (listed first when they differ).
STACK_KEYS: tuple[str, ...] = ("image", "engine", "engine_version", "verifier_hash")
# Stack fields that name the system under test: they are expected to differ, never warned about.
SUBJECT_KEYS: frozenset[str] = frozenset({"system", "model", "agent", "checkpoint", "step", "name"})
# Run-level summary -> per-task map of the same thing (the harness records both).
PER_TASK_KEYS: dict[str, str] = {"image": "images", "verifier_hash": "verifier_hashes"}
POLICY: dict[str, float] = {
    "unpaired_fraction": 0.05,  # warn when more than this share of the tasks is not paired
    "few_tasks": FEW_TASKS,  # warn when fewer tasks are paired (the small-sample interval is used)
    # warn about attempt counts when the mean attempts per task differ by more than this share AND by more
    # than attempts_z standard errors (runs of one design differ by chance; the mode flipped ~75% of the time)
    "attempts_ratio": 1.10,
    "attempts_z": 3.0,
}


def stack_diff(base: dict[str, Any], cand: dict[str, Any]) -> list[str]:
    """Differing stack fields (the four key ones first), as 'key (base vs cand)'.

    Per-task maps (PER_TASK_KEYS) are compared on the tasks both runs have; when both runs carry
    the map, it replaces its run-level summary (a combined hash differs whenever the task sets do).
    """
    out: dict[str, str] = {}
    for k in sorted(set(base) | set(cand)):
        if k in SUBJECT_KEYS or base.get(k) == cand.get(k):
            continue
        a, b = base.get(k), cand.get(k)
        summary_of = PER_TASK_KEYS.get(k)
        if summary_of and isinstance(base.get(summary_of), dict) and isinstance(cand.get(summary_of), dict):
            continue  # judged by the per-task map instead
        if isinstance(a, dict) and isinstance(b, dict) and k in PER_TASK_KEYS.values():
            differ = sorted(t for t in set(a) & set(b) if a[t] != b[t])
            if differ:
                t = differ[0]
                out[k] = f"{k} ({len(differ)} shared tasks differ, e.g. {t}: {_short(a[t])} vs {_short(b[t])})"
            continue
        out[k] = f"{k} ({_short(a if k in base else '-')} vs {_short(b if k in cand else '-')})"
    order = sorted(out, key=lambda k: (_rank(k), k))
    return [out[k] for k in order]


def _rank(key: str) -> int:
    for i, k in enumerate(STACK_KEYS):
        if key == k or key == PER_TASK_KEYS.get(k):
            return i
    return len(STACK_KEYS)


def _short(value: Any, width: int = 48) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."


def typical_attempts(s: TaskScores) -> int:
    """The most common number of current trials per task."""
    values, counts = np.unique(s.trials, return_counts=True)
    return int(values[np.argmax(counts)])


def verifier_caveat(base: TaskScores, cand: TaskScores) -> str | None:
    """Two arms graded by different verifiers (task verifier hashes differ): the fix is to grade one arm's
    stored patches again under the other's verifier, `trialbook reverify` (harness/workflows/patches.py)."""
    a, b = base.stack.get("verifier_hashes"), cand.stack.get("verifier_hashes")
    if isinstance(a, dict) and isinstance(b, dict):
        differ = sorted(t for t in set(a) & set(b) if a[t] != b[t])
        said = f"{len(differ)} shared tasks' verifier hashes differ, e.g. {differ[0]}" if differ else ""
    else:
        ha, hb = base.stack.get("verifier_hash"), cand.stack.get("verifier_hash")
        said = f"verifier hash {ha} vs {hb}" if ha and hb and ha != hb else ""
    if not said:
        return None
    return (
        f"'{base.run}' and '{cand.run}' were graded by different verifiers ({said}): a difference may be the"
        f" verifier's; grade the older arm's patches again under today's verifier, e.g. `trialbook reverify"
        f" {base.run} --run {base.run}-reverified`, and compare that run"
    )


def run_caveats(base: TaskScores, cand: TaskScores) -> list[str]:
    out = []
    diff = stack_diff(base.stack, cand.stack)
    if diff:
        out.append(f"'{cand.run}' ran on a different stack than '{base.run}': " + "; ".join(diff))
    if verifier := verifier_caveat(base, cand):
        out.append(verifier)
    if attempts_differ(base.trials, cand.trials):
        ka, kb = float(base.trials.mean()), float(cand.trials.mean())
        out.append(
            f"different attempt counts: '{base.run}' has {ka:.2f} attempts/task on average, '{cand.run}' {kb:.2f}"
            " (task means of more attempts are less noisy; pass@k is not comparable)"
        )
    return out


def attempts_differ(a: np.ndarray, b: np.ndarray) -> bool:
    """Two runs' attempts per task come from different designs: the means differ by more than
    POLICY["attempts_ratio"] and by more than POLICY["attempts_z"] SEs of their difference (Welch)."""
    if a.size == 0 or b.size == 0:
        return False
    ma, mb = float(a.mean()), float(b.mean())
    if max(ma, mb) <= POLICY["attempts_ratio"] * min(ma, mb):
        return False
    se = float(np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)) if min(a.size, b.size) > 1 else 0.0
    return abs(ma - mb) > POLICY["attempts_z"] * se


def judged_caveat(s: TaskScores) -> str | None:
    total, graded = int(s.trials.sum()), int(s.graded.sum())
    if graded == total:
        return None
    return f"'{s.run}': judged {graded}/{total} trials; ungraded attempts are left out of task means"


def unpaired_caveat(cand: str, unpaired: dict[str, int], union: int) -> str | None:
    n = sum(unpaired.values())
    if union == 0 or n / union <= POLICY["unpaired_fraction"]:
        return None
    why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in unpaired.items() if v)
    return f"{n} of {union} tasks not paired for '{cand}' ({why}): the comparison covers only the rest"


def few_tasks_caveat(cand: str, n: int) -> str | None:
    if n >= POLICY["few_tasks"]:
        return None
    return (
        f"only {n} tasks paired for '{cand}' (few tasks): CIs are the small-sample (Agresti-Min adjusted)"
        " interval, clipped to [-100, +100] pp"
    )


def multiplicity_caveat(m: int, given: int, level: float) -> str | None:
    if m <= 1:
        return None
    picked = f"picked among {m}" if m > given else f"one of {m} candidates"
    return (
        f"each candidate is {picked} against one baseline: p-values adjusted (Holm"
        f"{'' if m == given else ', Bonferroni for unseen ones'}), CIs widened to {100 * level:.1f}% (Bonferroni);"
        " the best of several is biased upward, confirm it on fresh tasks/seeds (`trialbook prereg init`)"
    )

"""pass@k with the unbiased estimator of Chen et al. 2021: 1 - C(n-c, k) / C(n, k) per task, and
pass^k (all k attempts succeed; Yao et al. 2024, tau-bench) with its unbiased estimator C(c, k) / C(n, k).

Uses the stable product forms 1 - prod_{i=n-c+1}^{n} (1 - k/i) and prod_{i=0}^{k-1} (c-i)/(n-i), per
task in plain Python (the array forms apply them task by task: a few thousand tasks take milliseconds).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:  # `show` computes pass@k without importing numpy (tests/ledger/test_sqlite_reads.py)
    import numpy as np


class PassAtKRow(TypedDict):
    """One k of `paired_pass_at_k` (fractions): the tasks used, each run's mean, the difference, its CI."""

    tasks: int
    base: float
    cand: float
    diff: float
    se: float
    ci: list[float]
    few_tasks: bool


def pass_at_k_task(n: int, c: int, k: int) -> float:
    """One task's unbiased pass@k for n attempts with c successes (n >= k)."""
    if n - c < k:  # every k-subset contains a success
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def pass_hat_k_task(n: int, c: int, k: int) -> float:
    """One task's unbiased pass^k: the chance that k attempts drawn without replacement all succeed."""
    out = 1.0
    for i in range(k):
        out *= min(max((c - i) / (n - i), 0.0), 1.0)
    return out


TASK_ESTIMATORS: dict[str, Callable[[int, int, int], float]] = {"pass@": pass_at_k_task, "pass^": pass_hat_k_task}


def _per_task(name: str, n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    import numpy as np

    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if k < 1 or (n < k).any():
        raise ValueError(f"{name}k needs 1 <= k <= n for every task")
    task = TASK_ESTIMATORS[name]
    return np.fromiter((task(int(a), int(b), k) for a, b in zip(n, c, strict=True)), dtype=float, count=n.size)


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass@k for n attempts with c successes (requires n >= k)."""
    return _per_task("pass@", n, c, k)


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass^k: the chance that k attempts drawn without replacement all succeed."""
    return _per_task("pass^", n, c, k)


ESTIMATORS = {"pass@": pass_at_k, "pass^": pass_hat_k}


def ks_for(max_attempts: int) -> list[int]:
    """1, 2, 4, ... up to max_attempts (and max_attempts itself)."""
    ks, k = [], 1
    while k <= max_attempts:
        ks.append(k)
        k *= 2
    if ks and ks[-1] != max_attempts:
        ks.append(max_attempts)
    return ks


def run_pass_at_k(graded: Sequence[int], resolved: Sequence[int]) -> tuple[dict[str, float], dict[str, int]]:
    """({"pass@1": pct, "pass@2": ...}, {"pass@1": tasks, ...}) over the tasks with >= 1 graded attempt
    (graded / resolved attempts per task): each k is averaged over its own subset, the tasks with >= k
    graded attempts, whose size the second dict gives (`show` prints it); ({}, {}) below 2 typical attempts."""
    tasks = [(n, c) for n, c in zip(graded, resolved, strict=True) if n > 0]
    if not tasks or int(statistics.median(n for n, _ in tasks)) < 2:
        return {}, {}
    out, counts = {}, {}
    for k in ks_for(max(n for n, _ in tasks)):
        reach = [(n, c) for n, c in tasks if n >= k]
        if not reach:
            continue
        for name, est in TASK_ESTIMATORS.items():
            if name == "pass^" and k == 1:
                continue  # pass^1 = pass@1
            out[f"{name}{k}"] = round(100.0 * math.fsum(est(n, c, k) for n, c in reach) / len(reach), 2)
            counts[f"{name}{k}"] = len(reach)
    return out, counts


def paired_pass_at_k(
    base_n: np.ndarray, base_c: np.ndarray, cand_n: np.ndarray, cand_c: np.ndarray, level: float = 0.95
) -> dict[str, PassAtKRow]:
    """pass@k and pass^k of two runs on aligned tasks, with the paired t CI of the difference (fractions;
    clipped and flagged `few_tasks` below kernel.FEW_TASKS tasks, as the main difference's).

    k runs over 2, 4, ... up to the smaller typical attempt count; each k uses the tasks graded at
    least k times in both runs.
    """
    import numpy as np

    from trialbook.stats.kernel import clip_ci, t_interval

    typical = min(int(np.median(base_n)), int(np.median(cand_n))) if base_n.size else 0
    out: dict[str, PassAtKRow] = {}
    for k in ks_for(typical)[1:]:
        m = (base_n >= k) & (cand_n >= k)
        if m.sum() < 2:
            continue
        for name, est in ESTIMATORS.items():
            b = est(base_n[m], base_c[m], k)
            c = est(cand_n[m], cand_c[m], k)
            diff, se, lo, hi = t_interval(c - b, level)
            lo, hi, few = clip_ci(lo, hi, int(m.sum()))
            out[f"{name}{k}"] = {"tasks": int(m.sum()), "base": float(b.mean()), "cand": float(c.mean()),
                                 "diff": diff, "se": se, "ci": [lo, hi], "few_tasks": few}  # fmt: skip
    return out

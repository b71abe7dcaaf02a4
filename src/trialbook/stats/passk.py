"""pass@k with the unbiased estimator of Chen et al. 2021: 1 - C(n-c, k) / C(n, k) per task.

Uses the stable product form 1 - prod_{i=n-c+1}^{n} (1 - k/i), vectorised over tasks.
"""

from __future__ import annotations

import numpy as np

from trialbook.stats.kernel import t_interval
from trialbook.stats.scores import TaskScores


def pass_at_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass@k for n attempts with c successes (requires n >= k)."""
    n = np.asarray(n, dtype=np.int64)
    c = np.asarray(c, dtype=np.int64)
    if k < 1 or (n < k).any():
        raise ValueError("pass@k needs 1 <= k <= n for every task")
    out = np.ones(n.shape, dtype=float)
    sure = n - c < k  # every k-subset contains a success
    top = int(n.max()) if n.size else 0
    i = np.arange(1, top + 1, dtype=float)
    # factor (1 - k/i) for i in (n-c, n], 1 elsewhere; product along i
    use = (i[None, :] > (n - c)[:, None]) & (i[None, :] <= n[:, None])
    factors = np.where(use, 1.0 - k / i[None, :], 1.0)
    out[~sure] = 1.0 - np.prod(factors[~sure], axis=1)
    return out


def ks_for(max_attempts: int) -> list[int]:
    """1, 2, 4, ... up to max_attempts (and max_attempts itself)."""
    ks, k = [], 1
    while k <= max_attempts:
        ks.append(k)
        k *= 2
    if ks and ks[-1] != max_attempts:
        ks.append(max_attempts)
    return ks


def run_pass_at_k(s: TaskScores) -> dict[str, float]:
    """{"pass@1": pct, "pass@2": ...} averaged over tasks with >= k graded attempts; {} below 2 attempts."""
    graded = s.graded[s.scored]
    resolved = s.resolved[s.scored]
    if graded.size == 0 or int(np.median(graded)) < 2:
        return {}
    out = {}
    for k in ks_for(int(graded.max())):
        m = graded >= k
        if m.sum() == 0:
            continue
        out[f"pass@{k}"] = round(100.0 * float(pass_at_k(graded[m], resolved[m], k).mean()), 2)
    return out


def paired_pass_at_k(
    base_n: np.ndarray, base_c: np.ndarray, cand_n: np.ndarray, cand_c: np.ndarray, level: float = 0.95
) -> dict[str, dict[str, float | int | list[float]]]:
    """pass@k of two runs on aligned tasks, with the paired t CI of the difference (fractions).

    k runs over 2, 4, ... up to the smaller typical attempt count; each k uses the tasks graded at
    least k times in both runs.
    """
    typical = min(int(np.median(base_n)), int(np.median(cand_n))) if base_n.size else 0
    out: dict[str, dict[str, float | int | list[float]]] = {}
    for k in ks_for(typical)[1:]:
        m = (base_n >= k) & (cand_n >= k)
        if m.sum() < 2:
            continue
        b = pass_at_k(base_n[m], base_c[m], k)
        c = pass_at_k(cand_n[m], cand_c[m], k)
        diff, se, lo, hi = t_interval(c - b, level)
        out[f"pass@{k}"] = {"tasks": int(m.sum()), "base": float(b.mean()), "cand": float(c.mean()),
                            "diff": diff, "se": se, "ci": [lo, hi]}  # fmt: skip
    return out

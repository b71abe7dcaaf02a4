"""pass@k with the unbiased estimator of Chen et al. 2021: 1 - C(n-c, k) / C(n, k) per task, and
pass^k (all k attempts succeed; Yao et al. 2024, tau-bench) with its unbiased estimator C(c, k) / C(n, k).

Uses the stable product forms 1 - prod_{i=n-c+1}^{n} (1 - k/i) and prod_{i=0}^{k-1} (c-i)/(n-i),
vectorised over tasks.
"""

from __future__ import annotations

import numpy as np

from trialbook.stats.kernel import clip_ci, t_interval
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


def pass_hat_k(n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """Per-task unbiased pass^k: the chance that k attempts drawn without replacement all succeed."""
    n = np.asarray(n, dtype=float)
    c = np.asarray(c, dtype=float)
    if k < 1 or (n < k).any():
        raise ValueError("pass^k needs 1 <= k <= n for every task")
    i = np.arange(k, dtype=float)[None, :]
    return np.prod(np.clip((c[:, None] - i) / (n[:, None] - i), 0.0, 1.0), axis=1)


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
        for name, est in ESTIMATORS.items():
            if name == "pass^" and k == 1:
                continue  # pass^1 = pass@1
            out[f"{name}{k}"] = round(100.0 * float(est(graded[m], resolved[m], k).mean()), 2)
    return out


def paired_pass_at_k(
    base_n: np.ndarray, base_c: np.ndarray, cand_n: np.ndarray, cand_c: np.ndarray, level: float = 0.95
) -> dict[str, dict[str, float | int | list[float]]]:
    """pass@k and pass^k of two runs on aligned tasks, with the paired t CI of the difference (fractions).

    k runs over 2, 4, ... up to the smaller typical attempt count; each k uses the tasks graded at
    least k times in both runs.
    """
    typical = min(int(np.median(base_n)), int(np.median(cand_n))) if base_n.size else 0
    out: dict[str, dict[str, float | int | list[float]]] = {}
    for k in ks_for(typical)[1:]:
        m = (base_n >= k) & (cand_n >= k)
        if m.sum() < 2:
            continue
        for name, est in ESTIMATORS.items():
            b = est(base_n[m], base_c[m], k)
            c = est(cand_n[m], cand_c[m], k)
            diff, se, lo, hi = t_interval(c - b, level)
            lo, hi, _ = clip_ci(lo, hi, int(m.sum()))
            out[f"{name}{k}"] = {"tasks": int(m.sum()), "base": float(b.mean()), "cand": float(c.mean()),
                                 "diff": diff, "se": se, "ci": [lo, hi]}  # fmt: skip
    return out

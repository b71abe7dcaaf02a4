"""Several candidates against one baseline: Holm-adjusted p-values and Bonferroni-widened CIs.

Holm is done in numpy here (identical to statsmodels' multipletests(method="holm"), which the
tests check) because importing statsmodels costs over a second of CLI start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm step-down adjusted p-values, in the order given (nan stays nan and is not counted)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    m = ok.size
    if m:
        order = ok[np.argsort(p[ok], kind="stable")]
        stepped = (m - np.arange(m)) * p[order]
        out[order] = np.minimum(1.0, np.maximum.accumulate(stepped))
    return [float(x) for x in out]


def bonferroni_confidence(m: int, level: float = 0.95) -> float:
    """Per-comparison confidence level so that m intervals hold jointly at `level`."""
    return 1.0 - (1.0 - level) / max(m, 1)

"""The task bootstrap fills every resample, the first included: with one task every resample mean is that
task's difference, so both CI bounds are exactly it. A resample left unfilled keeps `np.empty`'s leftover
memory, which this test makes visible by asking for one or three resamples (not ten thousand, where one
stray value among the rest moves no percentile)."""

from __future__ import annotations

import numpy as np
import pytest

from trialbook.stats.paired import bootstrap_ci


@pytest.mark.parametrize(("n_resamples", "chunk"), [(1, 1), (1, 2_000), (3, 2), (5, 2)])
def test_every_resample_is_filled(n_resamples: int, chunk: int) -> None:
    # distinct odd values, so memory left over from an earlier call (or anything else) does not hold them
    for value in (0.3141592653, -0.2718281828, 0.0123456789 * n_resamples + chunk / 1e6):
        lo, hi = bootstrap_ci(np.array([value]), 0.95, n_resamples=n_resamples, chunk=chunk)
        assert (lo, hi) == (value, value), (n_resamples, chunk, value)


def test_a_single_resample_is_its_own_interval() -> None:
    # two tasks, one resample: its mean is one of 0.1, 0.2 or 0.3 (the mean of a draw of two with replacement)
    lo, hi = bootstrap_ci(np.array([0.1, 0.3]), 0.95, n_resamples=1, seed=7)
    assert lo == hi and min(abs(lo - m) for m in (0.1, 0.2, 0.3)) < 1e-12

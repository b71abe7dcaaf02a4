"""The sign test above dist.EXACT_SIGN_N untied tasks: the floating-point tail against scipy's exact
binomtest (its error, which the dist docstring states), and the switch from the exact sum."""

from __future__ import annotations

import pytest
from scipy import stats

from trialbook.stats import dist


@pytest.mark.parametrize("n", [dist.EXACT_SIGN_N + 1, 2_500, 10_000, 100_000, 1_000_000])
@pytest.mark.parametrize("share", [0.3, 0.45, 0.49, 0.499, 0.4999])
def test_large_sign_test_matches_scipy(n, share):
    k = int(n * share)
    ref = stats.binomtest(k, n).pvalue
    ours = dist.sign_test_p(n - k, k)
    assert ours == dist.sign_test_p(k, n - k)  # symmetric
    if ref < 1e-300:
        assert ours < 1e-290
    else:
        assert ours == pytest.approx(ref, rel=2e-9)


@pytest.mark.parametrize("n", [dist.EXACT_SIGN_N - 1, dist.EXACT_SIGN_N, dist.EXACT_SIGN_N + 1])
def test_both_sides_of_the_switch_agree_with_scipy(n):
    for k in (0, n // 3, n // 2 - 10, n // 2):
        assert dist.sign_test_p(n - k, k) == pytest.approx(stats.binomtest(k, n).pvalue, rel=1e-11, abs=1e-300)

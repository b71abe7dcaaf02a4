"""Holm and Bonferroni on the cases the random statsmodels cross-check does not pin: missing p-values,
ties, the cap at 1, the step-down order, and the per-comparison level typed in by hand."""

from __future__ import annotations

import math

import pytest
from statsmodels.stats.multitest import multipletests

from trialbook.stats.multiple import bonferroni_confidence, holm


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 times 3, 2, 1 = 0.03, 0.06, 0.04; running maximum 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06], abs=1e-15)
    assert holm([0.6, 0.7]) == [1.0, 1.0]  # 1.2 and 0.7 -> running max 1.2 -> capped at 1
    assert holm([0.2, 0.2, 0.2]) == pytest.approx([0.6, 0.6, 0.6], abs=1e-15)  # ties share one value
    assert holm([0.02]) == [0.02]
    assert holm([]) == []


def test_holm_leaves_nan_out_of_the_count():
    got = holm([0.04, float("nan"), 0.01, 0.03])
    assert math.isnan(got[1])
    ref = multipletests([0.04, 0.01, 0.03], method="holm")[1]  # m = 3, not 4
    assert [got[0], got[2], got[3]] == pytest.approx(list(ref), abs=1e-15)
    assert [got[0], got[2], got[3]] == pytest.approx([0.06, 0.03, 0.06], abs=1e-15)
    assert all(math.isnan(x) for x in holm([float("nan"), float("nan")]))


def test_bonferroni_confidence_by_hand():
    assert bonferroni_confidence(1) == pytest.approx(0.95, abs=1e-15)
    assert bonferroni_confidence(0) == pytest.approx(0.95, abs=1e-15)  # no comparison: the plain level
    assert bonferroni_confidence(3) == pytest.approx(1 - 0.05 / 3, abs=1e-15)
    assert bonferroni_confidence(4, 0.9) == pytest.approx(0.975, abs=1e-15)

"""The edges of the interval kernel and the paired comparison that the scipy cross-checks never reach:
the tie threshold, the few-tasks clip at exactly kernel.FEW_TASKS, zero-variance p-values, a group with
exactly two clusters, the default levels. Expected values are typed in by hand or come from scipy."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from trialbook.stats.kernel import FEW_TASKS, clip_ci, cluster_ratio_ci, t_interval, t_p_value, win_loss
from trialbook.stats.paired import bootstrap_ci, correlation, paired


def test_a_difference_of_exactly_the_tie_threshold_is_a_tie():
    won, lost = win_loss(np.array([1e-9, -1e-9, 1.5e-9, -1.5e-9, 0.0, 0.25, -0.25]))
    assert won.tolist() == [False, False, True, False, False, True, False]
    assert lost.tolist() == [False, False, False, True, False, False, True]


def test_clip_applies_below_thirty_tasks_only():
    assert FEW_TASKS == 30
    assert clip_ci(-1.5, 1.25, 29) == (-1.0, 1.0, True)
    assert clip_ci(-1.5, 1.25, 30) == (-1.5, 1.25, False)  # not clipped at 30 tasks
    assert clip_ci(-0.5, 0.75, 3) == (-0.5, 0.75, True)  # inside [-1, 1]: unchanged
    lo, hi, few = clip_ci(float("nan"), float("nan"), 1)
    assert math.isnan(lo) and math.isnan(hi) and few


def test_t_p_value_edges():
    assert t_p_value(0.0, 0.0, 5) == 1.0  # every difference 0
    assert t_p_value(0.2, 0.0, 5) == 2 * 0.5**5  # every difference 0.2: the sign test's p, not t's 0
    assert t_p_value(-0.2, 0.0, 12) == 2 * 0.5**12
    assert math.isnan(t_p_value(0.1, float("nan"), 5))
    assert math.isnan(t_p_value(0.1, 0.05, 1))
    assert t_p_value(0.1, 0.05, 2) == pytest.approx(2 * stats.t.sf(2.0, 1), rel=1e-10)  # t = 2 on 1 df
    assert t_p_value(-0.1, 0.05, 4) == pytest.approx(2 * stats.t.sf(2.0, 3), rel=1e-10)


def test_t_interval_default_level_and_two_tasks():
    d = np.array([0.0, 0.5])
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    mean, se, lo, hi = t_interval(d)  # the default level is 0.95
    assert (mean, se) == pytest.approx((0.25, 0.25))  # sd = 0.5 / sqrt(2), se = sd / sqrt(2)
    assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no mean of an empty array along the way
        empty = t_interval(np.array([]))
    assert all(math.isnan(x) for x in empty)


def test_cluster_ratio_ci_by_hand_with_two_clusters_one_and_none():
    # group 0: clusters (1 of 2), (3 of 4) and one with no trials; group 1: one cluster; group 2: none
    y = np.array([1.0, 3.0, 0.0, 1.0])
    n = np.array([2.0, 4.0, 0.0, 3.0])
    group = np.array([0, 0, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the empty group's 0/0 and the lone cluster's C-1 = 0 are expected
        p, lo, hi = cluster_ratio_ci(y, n, group, 3)
    assert len(p) == len(lo) == len(hi) == 3
    # p = 4/6; residuals 1 - 4/3 and 3 - 8/3 square to 1/9 each; Var = 2/1 * (2/9) / 36 = 1/81, SE = 1/9
    half = stats.t.ppf(0.975, 1) / 9
    assert p[0] == pytest.approx(2 / 3)
    assert (lo[0], hi[0]) == pytest.approx((2 / 3 - half, 2 / 3 + half), rel=1e-10)
    assert p[1] == pytest.approx(1 / 3) and math.isnan(lo[1]) and math.isnan(hi[1])  # one cluster: no interval
    assert math.isnan(p[2]) and math.isnan(lo[2]) and math.isnan(hi[2])
    _, lo90, hi90 = cluster_ratio_ci(y, n, group, 3, level=0.9)
    assert hi90[0] - lo90[0] == pytest.approx(2 * stats.t.ppf(0.95, 1) / 9, rel=1e-10)


def test_correlation_needs_three_tasks_and_variation():
    assert correlation(np.array([0.0, 1.0]), np.array([1.0, 0.0])) is None
    assert correlation(np.array([0.5, 0.5, 0.5]), np.array([0.0, 1.0, 0.5])) is None
    assert correlation(np.array([0.0, 1.0, 0.5]), np.array([0.5, 0.5, 0.5])) is None
    b, c = np.array([0.0, 1.0, 0.5]), np.array([0.0, 0.5, 1.0])
    assert correlation(b, c) == pytest.approx(stats.pearsonr(b, c)[0], abs=1e-12)  # 0.5


def test_paired_counts_ties_and_means_by_hand():
    base = np.array([0.0, 0.5, 1.0, 0.5, 0.25])
    cand = np.array([1.0, 0.5, 0.0, 0.5 + 1e-10, 0.75])
    r = paired(base, cand)
    assert (r.n, r.wins, r.losses, r.ties) == (5, 2, 1, 2)
    assert (r.base_mean, r.cand_mean) == pytest.approx((0.45, 0.55))
    assert r.sign_p == pytest.approx(stats.binomtest(2, 3).pvalue, abs=1e-12)  # 1.0
    assert r.level == 0.95 and r.few_tasks is True
    assert r.as_dict()["ties"] == 2 and r.as_dict()["few_tasks"] is True
    ref = stats.ttest_rel(cand, base)
    ci = ref.confidence_interval(0.95)
    assert r.ci == pytest.approx((max(ci.low, -1.0), min(ci.high, 1.0)), abs=1e-10)
    assert r.p_value == pytest.approx(ref.pvalue, abs=1e-10)


def test_bootstrap_percentiles_on_a_two_task_distribution():
    # d = (0, 1): a resample's mean is 0, 0.5 or 1 with chance 1/4, 1/2, 1/4. At level 0.4 the
    # percentiles are the 30% and 70% quantiles, both inside the 0.5 block (which spans 25%..75%).
    assert bootstrap_ci(np.array([0.0, 1.0]), level=0.4) == (0.5, 0.5)
    # at 0.95 the 2.5% and 97.5% quantiles fall in the 0 and the 1 blocks
    assert bootstrap_ci(np.array([0.0, 1.0])) == (0.0, 1.0)


def test_bootstrap_fills_every_resample_when_chunks_do_not_divide_them():
    # one task: every resample's mean is that task's difference, whatever the chunking
    assert bootstrap_ci(np.array([0.5]), n_resamples=3, chunk=2) == (0.5, 0.5)
    assert bootstrap_ci(np.array([-0.25]), n_resamples=5, chunk=2) == (-0.25, -0.25)


@pytest.mark.parametrize(
    ("n", "level", "whole_range"),
    [(3, 0.95, True), (5, 0.95, True), (6, 0.95, False), (6, 0.975, True), (7, 0.975, False), (40, 0.99, False)],
)
def test_every_difference_equal_gives_the_sign_tests_interval(n, level, whole_range):
    """All n differences +0.5: the t interval would be the point 0.5 with p 0 even at n = 3. The exact sign
    test's interval is the point only where n of n one way is significant (2 * 0.5^n <= 1 - level)."""
    d = np.full(n, 0.5)
    mean, se, lo, hi = t_interval(d, level)
    assert (mean, se) == (0.5, 0.0)
    assert (lo, hi) == ((-1.0, 1.0) if whole_range else (0.5, 0.5))
    assert whole_range == (stats.binomtest(n, n, 0.5).pvalue > 1 - level)
    assert t_p_value(mean, se, n) == pytest.approx(stats.binomtest(n, n, 0.5).pvalue, rel=1e-12)
    zero = t_interval(np.zeros(n), level)  # every difference 0: the point 0 (p 1), at any n
    assert zero[2:] == (0.0, 0.0) and t_p_value(0.0, 0.0, n) == 1.0


def test_three_tasks_all_won_is_no_claim(cli, tmp_path):
    """The case that claimed: 3 tasks, candidate resolves all, baseline none -> p was 0.0 and claim YES."""
    for run, outcome in (("b", "unresolved"), ("c", "resolved")):
        f = tmp_path / f"{run}.jsonl"
        f.write_text("".join(f'{{"task_id": "t{i}", "attempt": 0, "outcome": "{outcome}"}}\n' for i in range(3)))
        assert cli("import", "jsonl", str(f), "--run", run).exit_code == 0
    r = cli("compare", "b", "c", "--json")
    row = json.loads(r.stdout)["comparisons"][0]
    assert row["diff_pp"] == 100.0 and row["wins"] == 3
    assert row["p_value"] == 0.25 and row["ci_adjusted_pp"] == [-100.0, 100.0] and row["claim"] is False

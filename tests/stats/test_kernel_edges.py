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

from smallsample import adjusted
from trialbook.stats.kernel import FEW_TASKS, clip_ci, cluster_ratio_ci, diff_interval, t_interval, win_loss
from trialbook.stats.paired import bootstrap_ci, correlation, paired


def test_a_difference_of_exactly_the_tie_threshold_is_a_tie():
    won, lost = win_loss(np.array([1e-9, -1e-9, 1.5e-9, -1.5e-9, 0.0, 0.25, -0.25]))
    assert won.tolist() == [False, False, True, False, False, True, False]
    assert lost.tolist() == [False, False, False, True, False, False, True]


def test_clip_to_the_possible_range_and_flag_below_thirty_tasks():
    assert FEW_TASKS == 30
    assert clip_ci(-1.5, 1.25, 29) == (-1.0, 1.0, True)
    assert clip_ci(-1.5, 1.25, 30) == (-1.0, 1.0, False)  # clipped at any n, flagged below 30
    assert clip_ci(-0.5, 0.75, 3) == (-0.5, 0.75, True)  # inside [-1, 1]: unchanged
    lo, hi, few = clip_ci(float("nan"), float("nan"), 1)
    assert math.isnan(lo) and math.isnan(hi) and few


def test_p_value_edges():
    big = np.random.default_rng(0).normal(0.1, 0.3, 4000)  # many tasks: the t test's p (no switch at 30)
    assert diff_interval(big).p == pytest.approx(stats.ttest_1samp(big, 0.0).pvalue, rel=0.05)
    mid = np.random.default_rng(0).normal(0.1, 0.3, 40)
    assert diff_interval(mid).p == pytest.approx(adjusted(mid)[3], rel=1e-9)
    assert diff_interval(np.zeros(5)).p == 1.0  # every difference 0
    assert math.isnan(diff_interval(np.array([0.1])).p)
    small = np.array([0.5, 0.0, 1.0, 0.5, 0.25])  # below 30: the adjusted interval's own p
    r = diff_interval(small)
    assert r.adjusted and (r.p < 0.05) == (r.lo > 0)


def test_adjusted_interval_by_hand_with_two_tasks():
    """Below 30 tasks: d = (0, 0.5) plus 1/2 pseudo-task at +1, 1/2 at -1, 1 at 0 (N = 4): mean 0.5/4,
    second moment (0.25 + 1)/4, SE sqrt(var / 4), t on 2n = 4 df."""
    d = np.array([0.0, 0.5])
    mean, se, lo, hi = t_interval(d)  # the default level is 0.95
    m = 0.5 / 4
    var = 1.25 / 4 - m * m
    assert mean == 0.25 and se == pytest.approx(math.sqrt(var / 4))
    half = stats.t.ppf(0.975, 4) * math.sqrt(var / 4)
    assert (lo, hi) == pytest.approx((m - half, m + half), rel=1e-10)
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
    d = cand - base  # five tasks: the adjusted interval (N = 7), by hand
    m, m2 = d.sum() / 7, (d @ d + 1) / 7
    se = math.sqrt((m2 - m * m) / 7)
    half = stats.t.ppf(0.975, 10) * se
    assert r.se == pytest.approx(se) and r.ci == pytest.approx(adjusted(d)[:2], abs=1e-10)
    assert m - half <= r.ci[0] < r.ci[1] <= m + half  # the monotone ends are never wider than the plain ones
    assert r.p_value == pytest.approx(adjusted(d)[3], abs=1e-10) and r.p_value <= 2 * stats.t.sf(abs(m) / se, 10)


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


@pytest.mark.parametrize(("n", "level"), [(2, 0.95), (3, 0.95), (5, 0.95), (6, 0.975), (40, 0.99), (500, 0.95)])
def test_tied_differences_never_give_a_point_interval(n, level):
    """All n differences equal: the t interval would be a point with p 0 at any n ([+50, +50] from 40
    tasks, [0, 0] from 2). The adjusted interval is never a point, and narrows as n grows."""
    for value in (0.5, 0.0, -1.0):
        r = diff_interval(np.full(n, value), level)
        assert r.adjusted and r.mean == value and r.hi - r.lo > 0
        assert r.lo < value + 1e-12 and r.hi > value - 0.3  # the point lies inside or near (shrunk to 0)
    wide = [diff_interval(np.full(k, 0.5), level) for k in (n, 2 * n)]
    assert wide[1].hi - wide[1].lo < wide[0].hi - wide[0].lo


def test_claims_are_monotone_in_the_evidence():
    """The audit's case: 5 of 5 tasks won gave no claim while 4 won and one half-won claimed. And for
    one-attempt tasks (d in {-1, 0, +1}), below 30 tasks, turning a loss into a tie or a win, or a tie
    into a win, never loses a claim (exhaustive)."""
    five = diff_interval(np.ones(5))
    four_half = diff_interval(np.array([1.0, 1, 1, 1, 0.5]))
    assert five.lo >= four_half.lo and (four_half.lo > 0) <= (five.lo > 0)

    def lo(n: int, w: int, losses: int) -> float:
        return diff_interval(np.r_[np.ones(w), -np.ones(losses), np.zeros(n - w - losses)]).lo

    for n in range(2, FEW_TASKS):
        for w in range(n + 1):
            for losses in range(n + 1 - w):
                if lo(n, w, losses) <= 0:
                    continue
                for w2, l2 in ((w, losses - 1), (w + 1, losses), (w + 1, losses - 1)):
                    if l2 >= 0 and w2 + l2 <= n:
                        assert lo(n, w2, l2) > 0, (n, w, losses, w2, l2)


def test_three_tasks_all_won_is_no_claim(cli, tmp_path):
    """The case that claimed: 3 tasks, candidate resolves all, baseline none -> p was 0.0 and claim YES."""
    for run, outcome in (("b", "unresolved"), ("c", "resolved")):
        f = tmp_path / f"{run}.jsonl"
        f.write_text("".join(f'{{"task_id": "t{i}", "attempt": 0, "outcome": "{outcome}"}}\n' for i in range(3)))
        assert cli("import", "jsonl", str(f), "--run", run).exit_code == 0
    r = cli("compare", "b", "c", "--json")
    row = json.loads(r.stdout)["comparisons"][0]
    assert row["diff_pp"] == 100.0 and row["wins"] == 3
    assert row["p_value"] > 0.05 and row["ci_adjusted_pp"][0] < 0 and row["claim"] is False


def test_p_below_alpha_exactly_when_the_interval_excludes_0():
    """The p value is the largest t statistic's over the same capped differences as the monotone ends, so it
    agrees with the interval at every level and K (3,000 random cases, three levels)."""
    rng = np.random.default_rng(59)
    for _ in range(3000):
        n, k = int(rng.integers(2, 40)), int(rng.integers(1, 6))
        d = rng.integers(-k, k + 1, size=n) / k
        level = float(rng.choice([0.9, 0.95, 0.99]))
        r = diff_interval(d, level, 1.0 if k == 1 else 0.5 / k)
        if abs(r.p - (1 - level)) > 1e-9:
            assert (r.p < 1 - level) == (r.lo > 0 or r.hi < 0), (d, level, r)

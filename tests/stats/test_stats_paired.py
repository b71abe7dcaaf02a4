"""Paired comparison: the seed's anchor dataset, scipy cross-checks, coverage by simulation, A/A."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from smallsample import adjusted
from trialbook.stats import dist
from trialbook.stats.multiple import holm
from trialbook.stats.paired import bootstrap_ci, paired
from trialbook.stats.synthetic import ANCHOR_CELLS, anchor_runs, simulate_run, write_jsonl


def anchor_arrays() -> tuple[np.ndarray, np.ndarray]:
    cells = [cell for cell, n in ANCHOR_CELLS.items() for _ in range(n)]
    return np.array([b for b, _ in cells]), np.array([c for _, c in cells])


@pytest.fixture
def anchor(cli, tmp_path):
    base, cand = anchor_runs()
    for name, lines in (("base", base), ("cand", cand)):
        r = cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name)
        assert r.exit_code == 0, r.stderr
    return cli


def test_anchor_dataset_reproduces_the_seed(anchor):
    r = anchor("compare", "base", "cand", "--json", "--bootstrap")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    (row,) = res["comparisons"]
    assert row["tasks_paired"] == 500 and row["subset"] == "all"
    assert row["base_pct"] == pytest.approx(56.4) and row["cand_pct"] == pytest.approx(59.1)
    assert row["diff_pp"] == pytest.approx(2.70)
    # the seed's SE is 1.449, the plain sd/sqrt(n); the printed SE is the augmented sample's (pseudo-tasks at
    # +-1/2 for two attempts), equal to it as compare prints it (two decimals)
    assert round(row["se_pp"], 2) == 1.45 and row["se_pp"] == pytest.approx(1.449, abs=5e-3)
    # the seed's t interval is [-0.15, +5.55]; the adjusted interval (pseudo-tasks at +-1/sqrt(2)) at 500 tasks
    assert row["ci_pp"] == pytest.approx([-0.15, 5.53], abs=0.01)
    assert (row["wins"], row["losses"], row["ties"]) == (83, 59, 358)
    assert row["sign_p"] == pytest.approx(0.053, abs=5e-4)
    assert row["bootstrap_ci_pp"] == pytest.approx([-0.20, 5.60], abs=0.15)  # Monte Carlo
    assert row["claim"] is False  # +2.7 < 4 and the CI includes 0
    assert row["attempts"] == {"base": 2, "cand": 2}


def test_intervals_match_scipy():
    b, c = anchor_arrays()
    two = np.full(b.size, 2)
    r = paired(b, c, 0.95, two, two)
    lo, hi, se, p = adjusted(c - b, 0.95, 0.25)  # 2 attempts each: c^2 = 1/(2K) = 1/4
    assert r.ci == pytest.approx((lo, hi), abs=1e-12) and r.p_value == pytest.approx(p, abs=1e-12)
    ref = stats.ttest_rel(c, b)  # at 500 tasks the pseudo-tasks move the t interval by < 0.03 pp
    ci = ref.confidence_interval(0.95)
    assert r.ci == pytest.approx((ci.low, ci.high), abs=3e-4)
    assert r.p_value == pytest.approx(ref.pvalue, abs=0.01)
    assert r.sign_p == pytest.approx(stats.binomtest(r.wins, r.wins + r.losses).pvalue, abs=1e-12)
    assert r.correlation == pytest.approx(stats.pearsonr(b, c)[0], abs=1e-12)
    ours = bootstrap_ci(c - b, n_resamples=10_000, seed=1)
    theirs = stats.bootstrap((c, b), lambda x, y: np.mean(x - y), paired=True, method="percentile",
                             n_resamples=10_000, rng=np.random.default_rng(2)).confidence_interval  # fmt: skip
    assert ours == pytest.approx((theirs.low, theirs.high), abs=0.004)  # Monte Carlo error only
    assert ours == pytest.approx(r.ci, abs=0.004)  # the seed: t and bootstrap agree within ~0.05 pp at n=500


@pytest.mark.parametrize("level", [0.95, 0.975, 0.9833333])
def test_t_interval_levels_match_scipy(level):
    rng = np.random.default_rng(7)
    b, c = rng.random(40), rng.random(40)
    lo, hi, _, _ = adjusted(c - b, level)
    assert paired(b, c, level).ci == pytest.approx((lo, hi), abs=1e-12)
    big_b, big_c = rng.random(4000), rng.random(4000)  # no switch: tends to scipy's t interval as n grows
    ci = stats.ttest_rel(big_c, big_b).confidence_interval(level)
    assert paired(big_b, big_c, level).ci == pytest.approx((ci.low, ci.high), abs=2e-4)


def test_distribution_functions_match_scipy():
    for df in (1, 2, 3, 4, 7, 30, 141, 499, 7999):
        for p in (0.6, 0.9, 0.975, 0.9875, 0.995, 0.9995):
            assert dist.t_ppf(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-10)
            assert dist.t_ppf(1 - p, df) == pytest.approx(stats.t.ppf(1 - p, df), rel=1e-10)
        for t in (0.0, 0.3, 1.5, 2.5, 6.0):
            assert dist.t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(t, df), abs=1e-13)
    for w, lo in ((83, 59), (0, 0), (10, 0), (7, 7), (40, 71)):
        ref = stats.binomtest(w, w + lo).pvalue if w + lo else 1.0
        assert dist.sign_test_p(w, lo) == pytest.approx(ref, abs=1e-14)


def test_holm_matches_statsmodels():
    rng = np.random.default_rng(3)
    for m in (1, 2, 3, 5, 8):
        for _ in range(4):  # each multipletests call costs ~0.2 s
            p = rng.random(m) ** 3
            assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]), abs=1e-15)


def test_coverage_of_the_95_ci_under_no_difference():
    """2,000 simulated paired experiments (true difference 0): the CI covers 0 in 93-97% of them.

    Each experiment draws fresh tasks (heterogeneous difficulty) with per-task true effects of random
    sign (so ω² > 0 and the population mean difference is exactly 0), then K=2 attempts per task.
    """
    rng = np.random.default_rng(20241101)
    n_tasks, k, experiments = 300, 2, 2000
    covered = 0
    for _ in range(experiments):
        p = rng.beta(0.6, 0.5, n_tasks)
        delta = 0.5 * np.minimum(p, 1 - p) * rng.choice([-1, 1], n_tasks)
        sb = (rng.random((n_tasks, k)) < (p - delta)[:, None]).mean(1)
        sc = (rng.random((n_tasks, k)) < (p + delta)[:, None]).mean(1)
        lo, hi = paired(sb, sc).ci
        covered += lo <= 0 <= hi
    assert 0.93 <= covered / experiments <= 0.97


def test_attempt_level_pairing_would_be_too_narrow():
    """Treating attempts as independent tasks shrinks the CI: the task-level one is wider."""
    b, c = anchor_arrays()
    task_half = np.diff(paired(b, c).ci)[0] / 2
    # attempt-level: each of the 2 attempts as a separate "task" (what STATS.md forbids)
    ab = np.repeat(b, 2)
    ac = np.repeat(c, 2)
    attempt_half = np.diff(paired(ab, ac).ci)[0] / 2
    assert attempt_half < task_half * 0.75


def test_a_a_runs_do_not_claim(cli, tmp_path):
    rng = np.random.default_rng(11)
    probs = rng.beta(0.5, 0.5, 500)
    for name in ("a1", "a2"):
        path = write_jsonl(tmp_path / f"{name}.jsonl", simulate_run(probs, 4, rng), stack={"image": "img:1"})
        assert cli("import", "jsonl", str(path), "--run", name).exit_code == 0
    res = json.loads(cli("compare", "a1", "a2", "--json").stdout)
    (row,) = res["comparisons"]
    assert row["claim"] is False
    assert abs(row["diff_pp"]) < 4
    assert row["ci_pp"][0] < 0 < row["ci_pp"][1] or abs(row["diff_pp"]) < 2
    assert res["warnings"] == []  # same stack, same attempts, everything paired


def test_false_claim_rate_of_a_a_is_small():
    """Many A/A pairs: the claim rule (diff >= 1 pp, CI lo > 0) fires in at most ~2.5% of them."""
    rng = np.random.default_rng(5)
    claims = 0
    for _ in range(400):
        p = rng.beta(0.5, 0.5, 200)
        sa = (rng.random((200, 2)) < p[:, None]).mean(1)
        sb = (rng.random((200, 2)) < p[:, None]).mean(1)
        r = paired(sa, sb)
        claims += r.diff * 100 >= 1 and r.ci[0] > 0
    assert claims / 400 <= 0.04

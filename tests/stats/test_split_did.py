"""`compare --split`: memorisation vs transfer as a difference in differences (in-pool gain minus
out-of-pool gain) with its interval, and the warnings when the compared tasks overlap a training pool."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.weightstats import CompareMeans, DescrStatsW

from trialbook.stats.compare import _gap
from trialbook.stats.kernel import did_interval
from trialbook.stats.paired import paired
from trialbook.stats.synthetic import simulate_run, task_ids, write_jsonl

REPS = 1_000
TRANSFER, MEMORISATION = 0.03, 0.05  # every task gains 3 pp; the trained-on tasks 5 pp more


def _truth(a: float, b: float) -> float:
    p = np.random.default_rng(0).beta(a, b, 1_000_000)
    gain = lambda x: np.mean(np.clip(p + x, 0, 1) - p)  # noqa: E731
    return float(gain(TRANSFER + MEMORISATION) - gain(TRANSFER))


@pytest.mark.parametrize(
    ("n_in", "n_out", "attempts", "upper"),
    [(100, 150, 2, 0.97), (12, 200, 1, 0.97), (40, 8, 4, 1.0)],  # 8 tasks of partial scores: conservative
)
def test_did_interval_covers_a_planted_memorisation_effect(n_in, n_out, attempts, upper):
    """1,000 replications a design (Monte Carlo SE ~0.7 pp): tasks of Beta(2, 3) difficulty; in-pool tasks gain
    8 pp, the others 3 pp. Small subsets use the small-sample interval's SE and the Welch df."""
    rng = np.random.default_rng(n_in)
    truth = _truth(2, 3)
    hits = 0
    for _ in range(REPS):
        rows = []
        for n, gain in ((n_in, TRANSFER + MEMORISATION), (n_out, TRANSFER)):
            p = rng.beta(2, 3, n)
            base = rng.binomial(attempts, p) / attempts
            cand = rng.binomial(attempts, np.clip(p + gain, 0, 1)) / attempts
            rows.append(paired(base, cand))
        gap = _gap("c", rows[0], rows[1])
        hits += gap.ci_pp[0] <= 100 * truth <= gap.ci_pp[1]
    assert 0.93 <= hits / REPS <= upper, hits / REPS


def test_did_interval_is_welchs_interval_from_30_tasks():
    """Given the plain SEs, the interval is Welch's two-sample t interval of the task differences
    (statsmodels), but for the df rounded down (compare passes the rows' adjusted SEs, a hair larger)."""
    rng = np.random.default_rng(3)
    d_in, d_out = rng.normal(0.08, 0.5, 60), rng.normal(0.02, 0.3, 45)
    a, b = paired(np.zeros(60), d_in), paired(np.zeros(45), d_out)
    assert a.se == pytest.approx(stats.sem(d_in), rel=0.05) and b.se == pytest.approx(stats.sem(d_out), rel=0.1)
    a, b = replace(a, se=float(stats.sem(d_in))), replace(b, se=float(stats.sem(d_out)))
    lo, hi, df = did_interval(a.diff - b.diff, a.se, a.n, b.se, b.n)
    cm = CompareMeans(DescrStatsW(d_in), DescrStatsW(d_out))
    _, _, sm_df = cm.ttest_ind(usevar="unequal")
    assert df == pytest.approx(sm_df, rel=1e-10)
    se = math.hypot(a.se, b.se)
    q = stats.t.ppf(0.975, math.floor(df))
    assert (lo, hi) == pytest.approx((a.diff - b.diff - q * se, a.diff - b.diff + q * se), rel=1e-10)
    sm_lo, sm_hi = cm.tconfint_diff(usevar="unequal")
    assert lo <= sm_lo and hi >= sm_hi and hi - lo < 1.001 * (sm_hi - sm_lo)  # floor(df): a hair wider
    assert all(math.isnan(x) for x in did_interval(0.1, float("nan"), 1, 0.1, 40))


def _import(cli, tmp_path, name, lines, *extra):
    r = cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name, *extra)
    assert r.exit_code == 0, r.stderr


def _runs(cli, tmp_path):
    rng = np.random.default_rng(7)
    ids = task_ids(80)
    p = rng.beta(2, 3, 80)
    _import(cli, tmp_path, "base", simulate_run(p, 2, rng))
    gain = np.where(np.arange(80) < 30, 0.15, 0.0)
    _import(cli, tmp_path, "ckpt", simulate_run(np.clip(p + gain, 0, 1), 2, rng))
    return ids


def test_split_prints_the_did_and_says_the_pool_overlaps(cli, tmp_path):
    ids = _runs(cli, tmp_path)
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(ids[:30]) + "\n")
    res = json.loads(cli("compare", "base", "ckpt", "--split", str(pool), "--json").stdout)
    (gap,) = res["split"]["gaps"]
    rows = {r["subset"]: r for r in res["comparisons"]}
    assert (gap["in_tasks"], gap["out_tasks"]) == (30, 50)
    assert gap["gap_pp"] == pytest.approx(rows["in"]["diff_pp"] - rows["out"]["diff_pp"], abs=1e-3)
    assert gap["ci_pp"][0] < gap["gap_pp"] < gap["ci_pp"][1] and gap["df"] > 1
    assert any(w.startswith(f"30 of the 80 paired tasks are in {pool} (the in-pool rows)") for w in res["warnings"])
    text = cli("compare", "base", "ckpt", "--split", str(pool)).stdout
    assert "ckpt: memorisation vs transfer (in-pool gain minus out-of-pool gain)" in text
    assert "(30 in / 50 out tasks)" in " ".join(text.split())


def test_a_training_pool_in_the_ledger_is_warned_about_by_default(cli, tmp_path):
    ids = _runs(cli, tmp_path)
    rng = np.random.default_rng(1)
    lines = simulate_run(np.full(20, 0.5), 1, rng)  # the first 20 of the 80 compared tasks
    assert {r["task_id"] for r in lines} == set(ids[:20])
    train = [{**row, "step": i, "wv": i, "epoch": 0} for i, row in enumerate(lines)]
    res = json.loads(cli("compare", "base", "ckpt", "--json").stdout)
    assert not any("pool" in w for w in res["warnings"])  # no training run yet
    _import(cli, tmp_path, "rl", train, "--kind", "train")
    res = json.loads(cli("compare", "base", "ckpt", "--json").stdout)
    assert "20 of the 80 paired tasks are in the pool of training run 'rl'" in " ".join(res["warnings"])

"""pass@k: the unbiased estimator against the binomial formula, and `show` reporting it."""

from __future__ import annotations

import json
from math import comb

import numpy as np
import pytest

from trialbook.stats.passk import ks_for, pass_at_k
from trialbook.stats.synthetic import simulate_run, write_jsonl


def test_estimator_equals_the_combinatorial_formula():
    rng = np.random.default_rng(0)
    n = rng.integers(1, 40, 300)
    c = rng.integers(0, n + 1)
    for k in (1, 2, 5):
        m = n >= k
        expect = [1 - comb(int(a) - int(b), k) / comb(int(a), k) for a, b in zip(n[m], c[m], strict=True)]
        assert pass_at_k(n[m], c[m], k) == pytest.approx(expect, abs=1e-12)
    assert pass_at_k(np.array([10]), np.array([3]), 1)[0] == pytest.approx(0.3)
    with pytest.raises(ValueError):
        pass_at_k(np.array([2]), np.array([1]), 3)


def test_stable_for_many_attempts():
    n, c = np.array([200, 200, 200]), np.array([0, 1, 199])
    got = pass_at_k(n, c, 100)
    assert got == pytest.approx([0.0, 0.5, 1.0])


def test_ks():
    assert ks_for(16) == [1, 2, 4, 8, 16] and ks_for(5) == [1, 2, 4, 5] and ks_for(1) == [1]


def test_show_reports_pass_at_k_for_multi_attempt_runs(cli, tmp_path):
    rng = np.random.default_rng(3)
    probs = rng.beta(0.5, 0.5, 120)
    lines = simulate_run(probs, 4, rng)
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / "r.jsonl", lines)), "--run", "r").exit_code == 0
    s = json.loads(cli("show", "r", "--json").stdout)
    draws = np.array([x["resolved"] for x in lines]).reshape(120, 4)
    c = draws.sum(1)
    assert set(s["pass_at_k"]) == {"pass@1", "pass@2", "pass@4", "pass^2", "pass^4"}
    assert s["pass_at_k"]["pass@1"] == pytest.approx(s["resolved_pct"], abs=0.01)
    assert s["pass_at_k"]["pass@4"] == pytest.approx(100 * (c > 0).mean(), abs=0.01)
    expect2 = np.mean([1 - comb(4 - x, 2) / comb(4, 2) for x in c]) * 100
    assert s["pass_at_k"]["pass@2"] == pytest.approx(expect2, abs=0.01)
    # pass^k: all k attempts succeed, unbiased C(c, k) / C(n, k)
    assert s["pass_at_k"]["pass^4"] == pytest.approx(100 * (c == 4).mean(), abs=0.01)
    assert s["pass_at_k"]["pass^2"] == pytest.approx(np.mean([comb(x, 2) / comb(4, 2) for x in c]) * 100, abs=0.01)
    assert "pass@2 =" in cli("show", "r").stdout


def test_single_attempt_runs_have_no_pass_at_k(cli, tmp_path):
    path = write_jsonl(tmp_path / "one.jsonl", [{"task_id": "a__b-1", "resolved": True}])
    cli("import", "jsonl", str(path), "--run", "one")
    assert "pass_at_k" not in json.loads(cli("show", "one", "--json").stdout)


def test_compare_reports_paired_pass_at_k(cli, tmp_path):
    from scipy import stats

    from smallsample import adjusted_pp
    from trialbook.stats.synthetic import ANCHOR_CELLS, anchor_runs

    base, cand = anchor_runs()
    for name, lines in (("base", base), ("cand", cand)):
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    (row,) = json.loads(cli("compare", "base", "cand", "--json").stdout)["comparisons"]
    p2 = row["pass_at_k"]["pass@2"]
    cells = [cell for cell, n in ANCHOR_CELLS.items() for _ in range(n)]
    b = np.array([s > 0 for s, _ in cells], dtype=float)  # pass@2 with 2 attempts: any success
    c = np.array([s > 0 for _, s in cells], dtype=float)
    ci = stats.ttest_rel(c, b).confidence_interval()
    assert p2["base_pct"] == pytest.approx(65.4) and p2["cand_pct"] == pytest.approx(68.0)
    assert p2["ci_pp"] == pytest.approx(adjusted_pp(c - b), abs=1e-3)  # compare's interval (stats.kernel)
    assert p2["ci_pp"] == pytest.approx([100 * ci.low, 100 * ci.high], abs=0.03)  # ~ scipy's t at 500 tasks
    assert p2["tasks"] == 500

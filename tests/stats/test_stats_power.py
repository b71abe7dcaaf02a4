"""`trialbook plan`: the seed's power table, the variance decomposition checked by simulation, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from trialbook.stats.paired import paired
from trialbook.stats.power import LARGE_N, claim_probability, within_variance
from trialbook.stats.scores import TaskScores
from trialbook.stats.synthetic import anchor_runs, simulate_run, write_jsonl


def _import(cli, tmp_path, name, lines):
    r = cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name)
    assert r.exit_code == 0, r.stderr


def test_seed_power_table(cli, tmp_path):
    base, cand = anchor_runs()
    _import(cli, tmp_path, "base", base)
    _import(cli, tmp_path, "cand", cand)
    r = cli("plan", "--tasks", "500", "--repeats", "2", "--effect", "4", "--from-run", "base", "--vs", "cand", "--json")
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert set(res["half_width_pp"]) == {"1", "2", "4", "8", "16"}
    for k, half, mde in (("1", 3.87, 5.53), ("2", 2.84, 4.06), ("16", 1.43, 2.05)):
        assert res["half_width_pp"][k] == pytest.approx(half, abs=0.005)
        assert res["mde_pp"][k] == pytest.approx(mde, abs=0.005)
    assert res["variance"]["sampling_share"] == pytest.approx(0.85, abs=0.01)  # "~85% of Var(d) is sampling noise"
    assert res["claim_power"] == pytest.approx(0.50, abs=0.01)  # "+4 threshold at K=2 has ~50% power"
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    for k, n in res["tasks_needed"].items():
        var_d = res["variance"]["omega2"] + res["variance"]["sampling_k1"] / int(k)
        normal = int(np.ceil(z**2 * var_d / 0.04**2))
        # the normal answer from 200 tasks on; below, the fewest tasks for 80% by compare's interval: a few more
        assert n == normal if normal >= LARGE_N else normal < n <= 1.05 * normal
        assert normal >= LARGE_N or claim_probability(var_d, n, 0.04, int(k)) >= 0.8
    human = cli("plan", "--tasks", "500", "--repeats", "2", "--effect", "4", "--from-run", "base", "--vs", "cand")
    assert "MDE" in human.stdout and "4.06" in human.stdout


def _scores(probs_runs: np.ndarray) -> TaskScores:
    n = probs_runs.shape[0]
    ids = np.array([f"t{i}" for i in range(n)])
    return TaskScores("x", ids, ids, np.full(n, probs_runs.shape[1]), np.full(n, probs_runs.shape[1]),
                      probs_runs.sum(1), {}, {}, "")  # fmt: skip


def test_within_variance_is_mean_of_per_task_sample_variances():
    rng = np.random.default_rng(0)
    draws = rng.random((50, 5)) < rng.random(50)[:, None]
    assert within_variance(_scores(draws)) == pytest.approx(np.var(draws, axis=1, ddof=1).mean())


def test_predicted_half_width_matches_simulation(cli, tmp_path):
    """Estimate ω² and σ² from a K=4 pilot pair, predict the K=1 and K=8 spread of diff; simulate it
    (fresh tasks from the same population in each simulated experiment)."""
    rng = np.random.default_rng(42)
    n = 400

    def population() -> tuple[np.ndarray, np.ndarray]:
        p = rng.beta(0.4, 0.4, n)
        return p, np.clip(p + rng.normal(0.03, 0.12, n), 0, 1)

    p_base, p_cand = population()
    _import(cli, tmp_path, "pa", simulate_run(p_base, 4, rng))
    _import(cli, tmp_path, "pb", simulate_run(p_cand, 4, rng))
    res = json.loads(cli("plan", "--tasks", str(n), "--repeats", "4", "--effect", "3",
                         "--from-run", "pa", "--vs", "pb", "--json").stdout)  # fmt: skip
    for k in (1, 8):
        diffs = []
        for _ in range(600):
            p_base, p_cand = population()
            sb = (rng.random((n, k)) < p_base[:, None]).mean(1)
            sc = (rng.random((n, k)) < p_cand[:, None]).mean(1)
            diffs.append(paired(sb, sc).diff)
        simulated_half = 100 * stats.norm.ppf(0.975) * np.std(diffs, ddof=1)
        assert res["half_width_pp"][str(k)] == pytest.approx(simulated_half, rel=0.15)


def test_plan_without_runs_uses_the_base_rate(cli):
    res = json.loads(cli("plan", "--tasks", "500", "--repeats", "1", "--effect", "5", "--json", use_db=False).stdout)
    # worst case: Var(d) = 2 p (1-p) / K at p = 0.5
    assert res["half_width_pp"]["1"] == pytest.approx(100 * stats.norm.ppf(0.975) * np.sqrt(0.5 / 500), abs=1e-3)
    assert res["source"]["kind"] == "assumption" and res["notes"]


def test_plan_from_one_run_says_it_is_optimistic(cli, tmp_path):
    rng = np.random.default_rng(1)
    _import(cli, tmp_path, "one", simulate_run(rng.random(100), 3, rng))
    res = json.loads(cli("plan", "--tasks", "100", "--repeats", "3", "--effect", "5", "--from-run", "one",
                         "--json").stdout)  # fmt: skip
    assert res["variance"]["omega2"] == 0 and "--vs" in res["notes"][0]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--tasks", "500", "--attempts", "0", "--effect", "4"), "--attempts must be at least 1"),
        (("--tasks", "500", "--repeats", "2", "--effect", "-3"), "--effect must be a positive"),
        (("--tasks", "1", "--repeats", "2", "--effect", "3"), "--tasks must be at least 2"),
        (("--tasks", "500", "--repeats", "2", "--effect", "3", "--vs", "x"), "--vs needs --from-run"),
        (("--tasks", "500", "--repeats", "2", "--effect", "3", "--from-run", "nope"), "no ledger at"),
        (("--tasks", "500", "--repeats", "2", "--effect", "3", "--base-rate", "120"), "--base-rate"),
    ],
)
def test_plan_bad_input(cli, args, message):
    r = cli("plan", *args)
    assert r.exit_code == 2 and message in r.stderr and r.stdout == ""


def test_single_attempt_pair_reproduces_the_observed_k1_interval(cli):
    """From two real single-attempt systems the K=1 row equals the CI that `compare` reports."""
    from paths import INSTANCES, RESULTS

    for s in ("20250726_mini-v1.0.0_gemini-2.5-pro", "20250807_mini-v1.7.0_gpt-5-mini"):
        cli("import", "swebench", str(RESULTS / f"{s}.json"), "--instances", str(INSTANCES), "--run", s[:8] + s[-4:])
    names = [r["name"] for r in json.loads(cli("runs", "--json").stdout)]
    plan = json.loads(cli("plan", "--tasks", "500", "--repeats", "1", "--effect", "4", "--from-run", names[0],
                          "--vs", names[1], "--json").stdout)  # fmt: skip
    row = json.loads(cli("compare", *names, "--json").stdout)["comparisons"][0]
    # compare's SE is the adjusted interval's (two pseudo-tasks among 500: within 0.1% of the plain SE)
    z_half = stats.norm.ppf(0.975) * row["se_pp"]
    assert plan["half_width_pp"]["1"] == pytest.approx(z_half, rel=2e-3)
    assert plan["variance"]["omega2"] == 0 and "optimistic" in plan["notes"][0]
    assert plan["half_width_pp"]["4"] == pytest.approx(z_half / 2, rel=2e-3)

"""`plan` at its edges, worked by hand: an estimated ω² of exactly 0 (no "negative" note), the two-run
source's detail, the --base-rate bounds, the defaults and the exact rounding of every figure, a run
with no variance at all, --metric reward read from both runs, and the two --vs messages."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.stats.power import PlanRequest, _two_runs, claim_probability, plan
from trialbook.stats.scores import TaskScores
from trialbook.stats.synthetic import write_jsonl


def _run(name: str, resolved: list[int], attempts: int = 2) -> TaskScores:
    n = len(resolved)
    g = np.full(n, attempts)
    ids = np.array([f"o__r-{i}" for i in range(n)])
    return TaskScores(run=name, task_ids=ids, repos=np.array(["o/r"] * n), trials=g, graded=g,
                      resolved=np.array(resolved), stack={}, labels={}, created="2026-01-01")  # fmt: skip


def test_omega2_of_exactly_zero_is_not_called_negative() -> None:
    # a: 0/2, 0/2, 1/2; b: 1/2, 2/2, 1/2. d = .5, 1, 0: Var(d) = .25. Within-task variances (ddof 1):
    # a: 0, 0, .5 -> 1/6; b: .5, 0, .5 -> 1/3. ω² = .25 - (1/6 + 1/3) / 2 = 0 exactly: no note
    omega2, sampling, source, notes = _two_runs(_run("a", [0, 0, 1]), _run("b", [1, 2, 1]))
    assert (omega2, notes) == (0.0, []) and sampling == pytest.approx(0.5, abs=1e-12)
    assert (source.kind, source.detail) == ("runs", "'a' vs 'b': 3 paired tasks, Var(d) 0.2500")
    omega2, sampling, _, notes = _two_runs(_run("a", [0, 0, 0]), _run("b", [0, 0, 0]))
    assert (omega2, sampling, notes) == (0.0, 0.0, [])  # no variation at all


def test_base_rate_bounds_and_defaults() -> None:
    out = plan(None, PlanRequest(100, 1, 5.0))
    # defaults: base rate 50% (2 x .5 x .5 = .5), --min-diff 4, metric resolved
    assert (out.variance.sampling_k1, out.min_diff_pp, out.metric, out.repeats) == (0.5, 4.0, "resolved", 1)
    assert out.source.detail == "base rate 50%, every task equally hard (worst case)"
    assert out.notes == [
        "no run given: all variation is taken as sampling noise at the base rate (conservative at K=1)"
    ]
    assert plan(None, PlanRequest(100, 1, 5.0, base_rate=0.5)).variance.sampling_k1 == round(2 * 0.005 * 0.995, 6)
    assert plan(None, PlanRequest(100, 1, 5.0, base_rate=99.5)).variance.sampling_k1 == round(2 * 0.995 * 0.005, 6)
    for rate in (0.0, 100.0, 100.5, -1.0):
        with pytest.raises(UserError, match=rf"^--base-rate must be a percentage between 0 and 100, not {rate}$"):
            plan(None, PlanRequest(100, 1, 5.0, base_rate=rate))


def test_vs_messages() -> None:
    with pytest.raises(UserError, match=r"^--vs needs --from-run$"):
        plan(None, PlanRequest(100, 1, 5.0, vs="b"))
    with pytest.raises(UserError, match=r"^--vs names the same run as --from-run$"):
        plan(None, PlanRequest(100, 1, 5.0, from_run="a", vs="a"))


def test_every_figure_is_rounded_as_documented() -> None:
    # base rate 12.345%: sampling variance 2 x .12345 x .87655 = 0.2164202, shown to 6 decimals
    out = plan(None, PlanRequest(100, 2, 95.0, base_rate=12.345))
    sampling = 2 * 0.12345 * 0.87655
    assert out.variance.sampling_k1 == out.variance.var_d_k1 == round(sampling, 6) == 0.21642
    z_a, z_b = norm.ppf(0.975), norm.ppf(0.8)
    for k in (1, 2, 4, 8, 16):
        se = math.sqrt(sampling / k / 100)
        assert out.half_width_pp[str(k)] == round(100 * z_a * se, 4)
        assert out.mde_pp[str(k)] == round(100 * (z_a + z_b) * se, 4)
        # a 95-point effect needs fewer than 2 tasks by the normal formula; compare's interval (never a point
        # at few tasks) needs a few: the fewest with 80% power
        need = out.tasks_needed[str(k)]
        assert (z_a + z_b) ** 2 * sampling / k / 0.95**2 < 2 and 2 < need <= 6
        assert (
            claim_probability(sampling / k, need, 0.95, k) >= 0.8 > claim_probability(sampling / k, need - 1, 0.95, k)
        )
    assert out.variance.sampling_share == 1.0  # no ω²: all of Var(d) is sampling noise


def test_a_ledger_without_a_run_is_the_base_rate_plan(db: str) -> None:
    out = plan(Ledger(db), PlanRequest(100, 1, 5.0))  # a library caller may pass its ledger: no run, no estimate
    assert out.source.kind == "assumption" and out.variance.sampling_k1 == 0.5


def _import(cli, tmp_path: Path, name: str, values: list[list[float]], field: str = "resolved") -> None:
    lines = [{"task_id": f"o__r-{t}", "attempt": a, field: v if field == "reward" else bool(v)}
             for t, vs in enumerate(values) for a, v in enumerate(vs)]  # fmt: skip
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0


def _plan(cli, *args: str) -> dict:
    res = cli("plan", "--tasks", "100", "--effect", "5", *args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_two_runs_with_repeats_by_hand(cli, tmp_path: Path) -> None:
    # a: 2/2, 0/2, 1/2, 0/2; b: 0/2, 2/2, 1/2, 2/2. d = -1, 1, 0, 1: Var(d) = 2.75/3 = .916667. Within-task
    # variances: .5 on the third task of each -> .125 each. ω² = .916667 - (.125 + .125) / 2 = .791667 (.7916667)
    _import(cli, tmp_path, "a", [[1, 1], [0, 0], [1, 0], [0, 0]])
    _import(cli, tmp_path, "b", [[0, 0], [1, 1], [1, 0], [1, 1]])
    out = _plan(cli, "--repeats", "2", "--from-run", "a", "--vs", "b")
    assert out["variance"]["omega2"] == 0.791667 and out["variance"]["sampling_k1"] == 0.25
    assert out["variance"]["var_d_k1"] == round(2.75 / 3 - 0.125 + 0.25, 6)
    # at K = 2: sampling share (.25 / 2) / (.791667 + .125) = .136364 -> .1364
    assert out["variance"]["sampling_share"] == 0.1364
    assert out["notes"] == [] and out["repeats"] == 2


def test_a_run_with_no_variance(cli, tmp_path: Path) -> None:
    _import(cli, tmp_path, "all", [[1], [1], [1]])
    out = _plan(cli, "--repeats", "1", "--from-run", "all")
    # p = 1: 2p(1-p) = 0, so Var(d) is 0 at every K: no share to speak of, and the fewest tasks, 2
    assert out["variance"]["var_d_k1"] == 0.0 and out["variance"]["sampling_share"] == 0.0
    assert set(out["tasks_needed"].values()) == {2}


def test_metric_reward_reads_both_runs_rewards(cli, tmp_path: Path) -> None:
    # rewards, 2 attempts per task; p: (.5, .5), (1, 0), (.25, .75): within-task variances 0, .5, .125
    # -> mean .208333, sampling 2 x .208333 (under --metric resolved the halves would count as 0)
    _import(cli, tmp_path, "p", [[0.5, 0.5], [1.0, 0.0], [0.25, 0.75]], "reward")
    out = _plan(cli, "--repeats", "2", "--from-run", "p", "--metric", "reward")
    assert out["variance"]["sampling_k1"] == round(2 * 0.625 / 3, 6) and out["metric"] == "reward"
    # q: (.5, 0), (1, 1), (.75, .75): variances .125, 0, 0 -> 1/24. p vs q: d = -.25, .5, .25, Var(d) .145833;
    # ω² = .145833 - (.208333 + .041667) / 2 = .020833, from both runs' reward variances
    _import(cli, tmp_path, "q", [[0.5, 0.0], [1.0, 1.0], [0.75, 0.75]], "reward")
    out = _plan(cli, "--repeats", "2", "--from-run", "p", "--vs", "q", "--metric", "reward")
    sa, sb, d = 0.625 / 3, 0.125 / 3, np.array([-0.25, 0.5, 0.25])
    assert out["variance"]["sampling_k1"] == round(sa + sb, 6)
    assert out["variance"]["omega2"] == round(d.var(ddof=1) - (sa + sb) / 2, 6)

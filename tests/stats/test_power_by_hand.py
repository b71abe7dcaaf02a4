"""`trialbook plan` worked by hand: the variance split for one run, two runs with and without repeats,
power and claim power from the normal formula, and the input boundaries."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from scipy.stats import norm

from trialbook.stats.synthetic import write_jsonl

Z = norm.ppf(0.975)


def _run(cli, tmp_path: Path, name: str, resolved: list[list[bool]]) -> None:
    lines = [{"task_id": f"o__r-{t}", "attempt": a, "resolved": ok} for t, oks in enumerate(resolved)
             for a, ok in enumerate(oks)]  # fmt: skip
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0


def _plan(cli, *args: str) -> dict:
    res = cli("plan", *args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


# 4 tasks x 2 attempts, 1 / 0 / 2 / 1 resolved: per-task variances k p(1-p)/(k-1) = .5, 0, 0, .5 -> mean .25
TWO = [[True, False], [False, False], [True, True], [False, True]]
# the same 4 tasks once each: scores 1, 0, 1, 0
ONE = [[True], [False], [True], [False]]


def test_one_run_with_repeats_gives_its_within_task_variance(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "two", TWO)
    out = _plan(cli, "--tasks", "100", "--repeats", "2", "--effect", "5", "--from-run", "two")
    assert out["variance"]["omega2"] == 0.0 and out["variance"]["sampling_k1"] == 0.5
    assert out["source"] == {"kind": "run", "detail": "'two': 4 tasks, within-task variance 0.2500"}
    assert out["notes"] == [
        "one run gives the sampling noise only; true per-task differences (ω²) are taken as 0, so these figures"
        " are optimistic: give --vs RUN2 to estimate ω² from a real pair"
    ]


def test_one_run_without_repeats_takes_2p_1_minus_p(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "one", ONE)
    out = _plan(cli, "--tasks", "100", "--repeats", "1", "--effect", "5", "--from-run", "one")
    assert (out["variance"]["omega2"], out["variance"]["sampling_k1"]) == (0.0, 0.5)  # p = .5
    assert out["source"] == {"kind": "run", "detail": "'one' (1 attempt/task: sampling variance p(1-p) at its rate)"}
    assert out["notes"] == [
        "the run has one attempt per task: Var(d) is taken as 2p(1-p), as if every task were equally hard - an"
        " upper bound at K=1 (real paired runs vary less; give --vs RUN2), and the rows for more repeats assume"
        " all of it is sampling noise"
    ]


@pytest.mark.parametrize(("first", "second"), [("one", "two"), ("two", "one")])
def test_two_runs_one_without_repeats(cli, tmp_path: Path, first: str, second: str) -> None:
    _run(cli, tmp_path, "one", ONE)
    _run(cli, tmp_path, "two", TWO)
    out = _plan(cli, "--tasks", "100", "--repeats", "1", "--effect", "5", "--from-run", first, "--vs", second)
    # d = two - one = 0, .5, -.5, 0: Var(d) = .5/3; the repeated run's sampling variance is .25 with
    # 1/K = .5; the other's is what remains of Var(d): .5/3 - .25 x .5 = 1/24 (its 1/K is 1)
    assert out["variance"]["omega2"] == 0.0
    assert out["variance"]["sampling_k1"] == pytest.approx(0.25 + 1 / 24, abs=1e-6)
    assert out["source"] == {"kind": "runs", "detail": f"'{first}' vs '{second}': 4 paired tasks, Var(d) 0.1667"}
    assert out["notes"][0].startswith("a run has one attempt per task, so true per-task differences and sampling")
    assert out["notes"][0].endswith("a pilot with >= 2 attempts per task in both runs fixes this")
    assert (
        "all of Var(d) is taken as sampling noise (ω² = 0), which makes the rows for more repeats optimistic"
        in (out["notes"][0])
    )


def test_two_runs_both_without_repeats_split_var_d_evenly(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "one", ONE)
    _run(cli, tmp_path, "flip", [[False], [False], [True], [True]])
    out = _plan(cli, "--tasks", "100", "--repeats", "1", "--effect", "5", "--from-run", "one", "--vs", "flip")
    # d = -1, 0, 0, 1: Var(d) = 2/3, all of it sampling noise
    assert out["variance"]["sampling_k1"] == pytest.approx(2 / 3, abs=1e-6) and out["variance"]["omega2"] == 0.0


def test_a_negative_omega2_is_set_to_zero_with_a_note(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "a", TWO)
    _run(cli, tmp_path, "b", TWO)
    out = _plan(cli, "--tasks", "100", "--repeats", "2", "--effect", "5", "--from-run", "a", "--vs", "b")
    # d = 0 everywhere: ω² = 0 - (.25 x .5 + .25 x .5) = -.25
    assert out["variance"]["omega2"] == 0.0 and out["variance"]["sampling_k1"] == 0.5
    assert out["notes"] == ["estimated ω² was negative (-0.2500): set to 0"]
    assert out["source"]["kind"] == "runs"


def test_two_runs_need_three_shared_tasks(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "three", ONE[:3])
    _run(cli, tmp_path, "other", [[False], [True], [True]])
    _plan(cli, "--tasks", "50", "--repeats", "1", "--effect", "5", "--from-run", "three", "--vs", "other")
    _run(cli, tmp_path, "pair", ONE[:2])
    res = cli("plan", "--tasks", "50", "--repeats", "1", "--effect", "5", "--from-run", "pair", "--vs", "other")
    assert res.exit_code == 2 and "runs 'pair' and 'other' share fewer than 3 graded tasks" in res.stderr


@pytest.mark.parametrize(("tasks", "repeats", "effect", "rate", "min_diff"), [(200, 1, 5.0, 50.0, 4.0),
                                                                             (80, 4, 12.0, 30.0, 10.0)])  # fmt: skip
def test_power_and_claim_power_near_the_normal_formula_at_many_tasks(
    cli, tasks, repeats, effect, rate, min_diff
) -> None:
    """At 80-200 tasks compare's interval (which plan's power is of) is within a point of the normal one."""
    out = _plan(cli, "--tasks", str(tasks), "--repeats", str(repeats), "--effect", str(effect),
                "--base-rate", str(rate), "--min-diff", str(min_diff))  # fmt: skip
    p, delta = rate / 100, effect / 100
    se = math.sqrt(2 * p * (1 - p) / repeats / tasks)
    assert out["power"] == pytest.approx(norm.cdf(delta / se - Z), abs=0.01)
    assert out["claim_power"] == pytest.approx(norm.cdf((delta - max(min_diff / 100, Z * se)) / se), abs=0.01)
    assert out["half_width_pp"][str(repeats)] == pytest.approx(100 * Z * se, abs=1e-4)


def test_no_noise_at_all_gives_certain_power(cli, tmp_path: Path) -> None:
    _run(cli, tmp_path, "all", [[True], [True], [True]])
    out = _plan(cli, "--tasks", "400", "--repeats", "1", "--effect", "5", "--from-run", "all", "--min-diff", "4")
    assert (out["power"], out["claim_power"]) == (1.0, 1.0)  # se = 0; 5 >= 4
    out = _plan(cli, "--tasks", "400", "--repeats", "1", "--effect", "3", "--from-run", "all", "--min-diff", "4")
    assert (out["power"], out["claim_power"]) == (1.0, 0.0)  # 3 < 4: never a claim
    # at 10 tasks compare's interval is no point even then (its pseudo-tasks): +5 on every task is no claim
    out = _plan(cli, "--tasks", "10", "--repeats", "1", "--effect", "5", "--from-run", "all", "--min-diff", "4")
    assert (out["power"], out["claim_power"]) == (0.0, 0.0)


def test_input_boundaries(cli) -> None:
    assert _plan(cli, "--tasks", "2", "--repeats", "1", "--effect", "0.5")["tasks"] == 2
    for args, message in ((("--tasks", "1", "--effect", "5"), "--tasks must be at least 2"),
                          (("--tasks", "10", "--effect", "0"), "--effect must be a positive number")):  # fmt: skip
        res = cli("plan", *args, "--repeats", "1")
        assert res.exit_code == 2 and message in res.stderr, res.stderr

"""pass@k on its edges: the attempt-count thresholds, a k reached by one task only, empty input,
the CI level, exact rounding. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from smallsample import adjusted
from trialbook.stats.passk import ESTIMATORS, paired_pass_at_k, pass_at_k
from trialbook.stats.synthetic import write_jsonl


def _lines(attempts: dict[str, list[bool]]) -> list[dict]:
    return [{"task_id": t, "attempt": a, "resolved": ok} for t, oks in attempts.items() for a, ok in enumerate(oks)]


def _show(cli, tmp_path: Path, name: str, lines: list[dict]) -> dict:
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    res = cli("show", name, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_two_attempts_are_enough_and_a_k_reached_by_one_task_counts(cli, tmp_path: Path) -> None:
    # A 1/2, B 0/2, C 2/2, D 1/3: median attempts 2; pass@3 exists for D alone
    shown = _show(cli, tmp_path, "r", _lines({"o__r-1": [True, False], "o__r-2": [False, False],
                                              "o__r-3": [True, True], "o__r-4": [False, True, False]}))  # fmt: skip
    # pass@1 = (1/2 + 0 + 1 + 1/3) / 4 = 45.833..; pass@2 = (1 + 0 + 1 + (1 - 1/3)) / 4 = 66.666..;
    # pass@3 = D's 1 - C(2,3)/C(3,3) = 1
    # pass^2 = (0 + 0 + 1 + C(1,2)/C(3,2)) / 4 = 25; pass^3 = D's C(1,3)/C(3,3) = 0
    assert shown["pass_at_k"] == {"pass@1": 45.83, "pass@2": 66.67, "pass@3": 100.0, "pass^2": 25.0, "pass^3": 0.0}
    # each k over its own subset, stated: pass@3 rests on D alone
    assert shown["pass_at_k_tasks"] == {"pass@1": 4, "pass@2": 4, "pass@3": 1, "pass^2": 4, "pass^3": 1}
    assert shown["graded_tasks"] == 4
    text = " ".join(cli("show", "r").stdout.split())
    assert "pass@3 = 100.0% over 1 of 4 graded tasks (those with >= 3 graded attempts), on resolved attempts" in text


def test_no_pass_at_k_when_nothing_is_graded(cli, tmp_path: Path) -> None:
    lines = [{**x, "outcome": "infra_error"} for x in _lines({"o__r-1": [False, False], "o__r-2": [False, False]})]
    shown = _show(cli, tmp_path, "broken", lines)
    assert shown["attempts_per_task"] == 2 and "pass_at_k" not in shown


def test_pass_at_k_of_no_task_is_empty_and_quiet() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero along the way either
        assert pass_at_k(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 1).size == 0
        assert pass_at_k(np.array([3, 5]), np.array([1, 0]), 2) == pytest.approx([1 - 1 / 3, 0.0])
    with pytest.raises(ValueError, match=r"pass@k needs 1 <= k <= n for every task"):
        pass_at_k(np.array([2]), np.array([1]), 0)
    assert paired_pass_at_k(np.array([], dtype=np.int64), np.array([], dtype=np.int64),
                            np.array([], dtype=np.int64), np.array([], dtype=np.int64)) == {}  # fmt: skip


def test_paired_pass_at_k_needs_both_runs_to_reach_k_and_two_tasks() -> None:
    # 4 attempts everywhere except the candidate's third task (2): pass@4 pairs tasks 1, 2 and 4 only
    base_n, base_c = np.array([4, 4, 4, 4]), np.array([1, 0, 2, 4])
    cand_n, cand_c = np.array([4, 4, 2, 4]), np.array([2, 1, 1, 4])
    out = paired_pass_at_k(base_n, base_c, cand_n, cand_c)
    assert sorted(out) == ["pass@2", "pass@4", "pass^2", "pass^4"]
    assert out["pass@4"]["tasks"] == 3 and out["pass@2"]["tasks"] == 4
    assert (out["pass@4"]["base"], out["pass@4"]["cand"]) == (pytest.approx(2 / 3), 1.0)  # any success: 2 of 3
    assert (out["pass^4"]["base"], out["pass^4"]["cand"]) == (pytest.approx(1 / 3), pytest.approx(1 / 3))  # all 4
    # exactly two tasks at k is enough for a row
    two = paired_pass_at_k(np.array([2, 2]), np.array([0, 1]), np.array([2, 2]), np.array([1, 2]))
    assert two["pass@2"]["tasks"] == 2 and two["pass@2"]["diff"] == pytest.approx(0.5)


def test_paired_pass_at_k_interval_at_the_requested_level() -> None:
    rng = np.random.default_rng(5)
    n = np.full(40, 4)
    base_c, cand_c = rng.integers(0, 5, 40), rng.integers(0, 5, 40)
    row = paired_pass_at_k(n, base_c, n, cand_c, level=0.9)["pass@2"]
    b, c = pass_at_k(n, base_c, 2), pass_at_k(n, cand_c, 2)
    lo, hi, se, _ = adjusted(c - b, 0.9)  # the paired interval of compare's rows (stats.kernel), by scipy
    assert row["ci"] == pytest.approx([lo, hi], abs=1e-12)
    assert row["se"] == pytest.approx(se, abs=1e-12)
    ci = stats.ttest_rel(c, b).confidence_interval(0.9)  # near the plain t interval already at 40 tasks
    assert row["ci"] == pytest.approx([ci.low, ci.high], abs=0.02)
    assert row["diff"] == pytest.approx(float(np.mean(c - b)), abs=1e-12)


@pytest.mark.parametrize("name", ["pass@", "pass^"])
def test_estimators_refuse_k_outside_1_to_n_with_their_own_message(name: str) -> None:
    est = ESTIMATORS[name]
    message = rf"^{re.escape(name)}k needs 1 <= k <= n for every task$"
    with pytest.raises(ValueError, match=message):
        est(np.array([2, 3]), np.array([1, 1]), 0)
    with pytest.raises(ValueError, match=message):
        est(np.array([2, 3]), np.array([1, 1]), 3)  # the first task has 2 attempts
    # k = 1 and k = n are fine: pass^1 is the success rate, pass^n all n attempts succeeding
    assert est(np.array([2, 4]), np.array([1, 4]), 1) == pytest.approx([0.5, 1.0])
    assert est(np.array([2, 2]), np.array([1, 2]), 2) == pytest.approx([1.0 if name == "pass@" else 0.0, 1.0])

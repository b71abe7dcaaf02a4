"""Verdicts that gate a CI job (issue 43): `compare --check` exits 1 when no candidate claims; `plan`
answers how many tasks / repeats when those are omitted, warns when --min-diff exceeds the effect, and
refuses a --min-diff that `compare` refuses."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trialbook.stats.power import PlanRequest, plan
from trialbook.stats.synthetic import simulate_run, write_jsonl


def _runs(cli, tmp_path, gain: float) -> None:
    rng = np.random.default_rng(5)
    probs = rng.beta(0.5, 0.5, 200)
    for name, p in (("b", probs), ("c", np.clip(probs + gain, 0, 1))):
        path = write_jsonl(tmp_path / f"{name}.jsonl", simulate_run(p, 2, rng))
        assert cli("import", "jsonl", str(path), "--run", name).exit_code == 0


def test_compare_check_exits_1_without_a_claim(cli, tmp_path):
    _runs(cli, tmp_path, 0.0)
    plain = cli("compare", "b", "c")
    assert plain.exit_code == 0  # without --check the verdict never sets the status
    r = cli("compare", "b", "c", "--check", "--json")
    assert r.exit_code == 1 and r.stderr == "check failed: no candidate claims\n"
    assert json.loads(r.stdout)["comparisons"][0]["claim"] is False  # the output is printed in full first


def test_compare_check_passes_with_a_claim(cli, tmp_path):
    _runs(cli, tmp_path, 0.3)
    r = cli("compare", "b", "c", "--check", "--markdown")
    assert r.exit_code == 0 and "| YES |" in r.stdout


def test_plan_answers_tasks_and_repeats_when_omitted():
    # no run: Var(d) = 2 p (1 - p) / K = 0.5 / K; n = (z_a + z_b)^2 Var / delta^2
    need = plan(None, PlanRequest(None, 2, 3.0))
    z = 1.959963984540054 + 0.8416212335729143
    assert need.tasks == int(np.ceil(z**2 * 0.25 / 0.03**2)) == 2181 and need.repeats == 2
    assert need.answer == "2181 tasks at K=2 give 80% power to detect +3 pp"
    assert need.power == pytest.approx(0.80, abs=0.002)
    reps = plan(None, PlanRequest(500, None, 3.0))  # K=8 needs 546 tasks, K=16 273
    assert reps.repeats == 16 and reps.answer == "K=16 attempts per task give 500 tasks 80% power for +3 pp"
    short = plan(None, PlanRequest(100, None, 2.0))
    assert short.repeats == 16 and short.answer.startswith("no K up to 16 gives 100 tasks 80% power for +2 pp")
    both = plan(None, PlanRequest(None, None, 5.0))
    assert both.repeats == 1 and both.tasks == int(np.ceil(z**2 * 0.5 / 0.05**2)) == 1570
    assert both.answer.endswith("at K=1 give 80% power to detect +5 pp")
    assert plan(None, PlanRequest(500, 2, 3.0)).answer is None


def test_plan_warns_when_min_diff_exceeds_the_effect():
    notes = plan(None, PlanRequest(500, 2, 3.0, min_diff=4.0)).notes
    assert any(n.startswith("--min-diff 4 is above the effect +3 pp") for n in notes)
    assert not any("--min-diff" in n for n in plan(None, PlanRequest(500, 2, 3.0, min_diff=3.0)).notes)


@pytest.mark.parametrize(("value", "why"), [
    ("nan", "--min-diff must be a finite number, not nan"), ("inf", "--min-diff must be a finite number, not inf"),
    ("-1", "--min-diff must be a non-negative number of points"),
])  # fmt: skip
def test_plan_refuses_the_min_diff_compare_refuses(cli, value, why):
    r = cli("plan", "--effect", "3", "--tasks", "100", "--repeats", "1", "--min-diff", value)
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and why in r.stderr


def test_plan_cli_prints_the_answer(cli):
    r = cli("plan", "--effect", "3", "--repeats", "2")
    assert r.exit_code == 0 and r.stdout.startswith("2181 tasks at K=2 give 80% power to detect +3 pp")

"""`attribute OLD NEW`: the parts add up exactly to the total, reruns get their own line."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction

import pytest
from sqlalchemy import func, select

from paths import INSTANCES, RESULTS
from trialbook.audit.attribute import apportion, attribute_runs
from trialbook.importers.to_ledger import import_run
from trialbook.ledger.schema import trials as trials_table
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import Outcome
from trialbook.records import Run, Trial


def _cents(x: float) -> int:
    return round(x * 100)


def _assert_sums(out: dict) -> None:
    assert sum(_cents(p["pp"]) for p in out["parts"]) == _cents(out["total_pp"])
    assert sum(_cents(v["pp"]) for v in out["by_repo"].values()) == _cents(out["total_pp"])
    assert sum(p["net"] for p in out["parts"]) == out["net"]
    assert sum(v["net"] for v in out["by_repo"].values()) == out["net"]
    assert sum(p["tasks"] for p in out["parts"]) + out["unchanged"] == out["pairs"]


def test_real_systems_attribution_sums_exactly(cli):
    files = sorted(RESULTS.glob("*.json"))[:2]
    names = []
    for f in files:
        res = cli("import", "swebench", str(f), "--instances", str(INSTANCES), "--run", f.stem)
        assert res.exit_code == 0, res.stderr
        names.append(f.stem)
    res = cli("attribute", *names, "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    resolved = [set(json.loads(f.read_text())["resolved"]) for f in files]
    assert out["pairs"] == 500
    assert out["net"] == len(resolved[1]) - len(resolved[0])
    assert out["total_pp"] == round(100 * out["net"] / 500, 2)
    gained = len(resolved[1] - resolved[0])
    part = next(p for p in out["parts"] if (p["from"], p["to"]) == ("unresolved", "resolved"))
    assert part["tasks"] == gained
    _assert_sums(out)
    human = cli("attribute", *names)
    assert human.exit_code == 0 and "total" in human.stdout


def _trial(task: str, outcome: Outcome, reward: float, mult: float = 1.0, repo: str = "org/repo") -> Trial:
    return Trial(task_id=task, repo=repo, outcome=outcome, reward=reward, extra={"timeout_multiplier": mult})


def _make_run(ledger: Ledger, name: str, rows: list[Trial]) -> None:
    import_run(ledger, Run(name=name), lambda run_id: [trial_row(run_id, t) for t in rows])


def _rerun(ledger: Ledger, name: str, replacements: dict[str, Trial]) -> None:
    """What `trialbook rerun` leaves behind: a new trial per replaced one, the old one superseded."""
    run_id = ledger.get_run(name).id
    old = {t.task_id: t.id for t in ledger.trial_rows(run_id)}
    c = trials_table.c
    for task, trial in replacements.items():
        with ledger.transaction() as conn:
            ledger.insert_trials(conn, [trial_row(run_id, trial)])
            new_id = conn.execute(select(func.max(c.id)).where(c.run_id == run_id, c.task_id == task)).scalar_one()
            conn.execute(trials_table.update().where(c.id == old[task]).values(superseded_by=new_id))


A, R, U = Outcome.AGENT_TIMEOUT, Outcome.RESOLVED, Outcome.UNRESOLVED


@pytest.fixture
def rerun_ledger(db: str) -> Ledger:
    ledger = Ledger(db)
    base = [_trial(f"org__repo-{i}", A, 0.0) for i in range(4)]
    base += [_trial("org__repo-4", A, 1.0)]  # timed out after writing a correct fix: resolved anyway
    base += [_trial(f"org__repo-{i}", R, 1.0) for i in (5, 6)]
    base += [_trial(f"org__repo-{i}", U, 0.0) for i in (7, 8, 9)]
    _make_run(ledger, "base", base)
    _rerun(
        ledger,
        "base",
        {
            "org__repo-0": _trial("org__repo-0", R, 1.0, 2.0),
            "org__repo-1": _trial("org__repo-1", R, 1.0, 2.0),
            "org__repo-2": _trial("org__repo-2", U, 0.0, 2.0),
            "org__repo-3": _trial("org__repo-3", A, 0.0, 2.0),
            "org__repo-4": _trial("org__repo-4", R, 1.0, 2.0),
        },
    )
    return ledger


def test_rerun_with_timeout_multiplier_is_its_own_line(rerun_ledger: Ledger, cli):
    out = attribute_runs(rerun_ledger, "base@original", "base").to_json()
    assert (out["old_pct"], out["new_pct"], out["total_pp"]) == (30.0, 50.0, 20.0)
    parts = {(p["from"], p["to"], p["via"]): (p["tasks"], p["net"], p["pp"]) for p in out["parts"]}
    assert parts == {
        ("agent_timeout", "resolved", "rerun x2"): (2, 2, 20.0),
        ("agent_timeout", "unresolved", "rerun x2"): (1, 0, 0.0),
    }
    assert out["unchanged"] == 7  # repo-3 timed out again, repo-4 was resolved before and after
    _assert_sums(out)
    human = cli("attribute", "base@original", "base")
    assert "rerun x2" in human.stdout
    assert "total +20.00 pp = 20.00 agent_timeout->resolved (rerun x2)" in human.stdout


def test_attribute_across_runs_by_transition_and_repo(rerun_ledger: Ledger):
    fixed = [_trial(f"org__repo-{i}", R, 1.0, repo="org/repo") for i in range(3)]
    fixed += [_trial("org__repo-3", Outcome.CONTEXT_OVERFLOW, 0.0), _trial("org__repo-4", R, 1.0)]
    fixed += [_trial("org__repo-5", R, 1.0), _trial("org__repo-6", U, 0.0)]
    fixed += [_trial(f"org__repo-{i}", U, 0.0) for i in (7, 8)] + [_trial("org__repo-9", R, 1.0)]
    _make_run(rerun_ledger, "fixed", fixed)
    out = attribute_runs(rerun_ledger, "base@original", "fixed").to_json()
    parts = {(p["from"], p["to"]): p["net"] for p in out["parts"]}
    assert parts == {
        ("agent_timeout", "resolved"): 3,
        ("agent_timeout", "context_overflow"): 0,
        ("resolved", "unresolved"): -1,
        ("unresolved", "resolved"): 1,
    }
    assert out["net"] == 3 and out["total_pp"] == 30.0
    _assert_sums(out)


def test_runs_without_common_trials_are_a_user_error(db: str, cli):
    ledger = Ledger(db)
    _make_run(ledger, "x", [_trial("org__repo-1", R, 1.0)])
    _make_run(ledger, "y", [_trial("org__repo-2", R, 1.0)])
    res = cli("attribute", "x", "y")
    assert res.exit_code == 2 and "share no" in res.stderr
    assert cli("attribute", "x", "nope").exit_code == 2


@pytest.mark.parametrize("seed", range(20))
def test_apportion_sums_exactly_and_stays_within_a_cent(seed: int):
    rng = random.Random(seed)
    n = rng.randint(7, 1000)
    exact = {k: Fraction(100 * rng.randint(-n // 5, n // 5), n) for k in range(rng.randint(1, 12))}
    total = sum(exact.values(), Fraction(0))
    rounded = apportion(exact, total)
    assert sum(round(v * 100) for v in rounded.values()) == math.floor(total * 100 + Fraction(1, 2))
    assert all(abs(Fraction(rounded[k]).limit_denominator(100) - exact[k]) < Fraction(1, 100) for k in exact)


def test_attribute_json_is_only_json(rerun_ledger: Ledger, cli):
    res = cli("attribute", "base@original", "base", "--json")
    assert res.exit_code == 0
    assert set(json.loads(res.stdout)) >= {"total_pp", "parts", "by_repo"}

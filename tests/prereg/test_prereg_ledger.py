"""Issue 15: preregistration kept in the ledger. The three cheats (re-hashing an edited plan, a plan
the ledger never saw, checking candidates one call at a time) are refused or adjusted for."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from trialbook.ledger import looks, plans
from trialbook.ledger.store import Ledger
from trialbook.prereg.plan import content_hash
from trialbook.stats.synthetic import simulate_run, task_ids, write_jsonl

N = 120


def _setup(cli, tmp_path, *extra: str) -> dict:
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(task_ids(N)) + "\n")
    r = cli("prereg", "init", "--pool", str(pool), "--train", "40", "--holdout", "80", "--seed", "3",
            "--min-diff", "3", "--out", str(tmp_path / "plan.yaml"), *extra)  # fmt: skip
    assert r.exit_code == 0, r.stderr
    rng = np.random.default_rng(1)
    probs = rng.beta(0.5, 0.5, N)
    runs = (("base", probs), ("c1", probs), ("c2", np.clip(probs + 0.08, 0, 1)), ("c3", probs), ("c4", probs))
    holdout = set(yaml.safe_load((tmp_path / "plan.yaml").read_text())["holdout"])
    for name, p in runs:
        lines = simulate_run(p, 1, rng)
        if name == "c3":
            for line in [x for x in lines if x["task_id"] in holdout][:10]:  # ungraded held-out trials
                line.pop("resolved", None)
                line["outcome"] = "infra_error"
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    return yaml.safe_load((tmp_path / "plan.yaml").read_text())


def _check(cli, tmp_path, *cands: str, plan: str = "plan.yaml"):
    args = [x for c in cands for x in ("--cand", c)]
    return cli("prereg", "check", str(tmp_path / plan), "--base", "base", *args, "--json")


def test_rehashed_edits_are_refused(cli, tmp_path):
    plan = _setup(cli, tmp_path)
    for key, value in (("min_diff_pp", 0.5), ("max_candidates", 5), ("created", "2020-01-01T00:00:00+00:00")):
        edited = {**plan, key: value}
        edited["hash"] = content_hash(edited)  # the cheat: recompute the self-hash after editing
        (tmp_path / "edited.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
        r = _check(cli, tmp_path, "c1", plan="edited.yaml")
        assert r.exit_code == 2 and "is not registered in this ledger" in r.stderr, (key, r.stderr)
    r = _check(cli, tmp_path, "c1")  # the registered plan: checked; c1 is no better, so exit 1 (a gate)
    assert r.exit_code == 1 and json.loads(r.stdout)["verdict"] == {"c1": False}
    assert "check failed: no candidate's preregistered claim holds" in r.stderr


def test_a_plan_from_another_ledger_is_refused(cli, tmp_path):
    _setup(cli, tmp_path)
    other = Ledger(str(tmp_path / "other.db"))
    pool = tmp_path / "pool.txt"
    r = cli("prereg", "init", "--pool", str(pool), "--train", "40", "--holdout", "80", "--seed", "4",
            "--out", str(tmp_path / "elsewhere.yaml"), "--db", str(other.url.removeprefix("sqlite:///")),
            use_db=False)  # fmt: skip
    assert r.exit_code == 0
    r = _check(cli, tmp_path, "c1", plan="elsewhere.yaml")
    assert r.exit_code == 2 and "not registered" in r.stderr


def test_registered_content_must_match(cli, tmp_path, db):
    plan = _setup(cli, tmp_path)
    ledger = Ledger(db)
    with ledger.engine.begin() as conn:  # the ledger's copy differs from the file (same hash)
        conn.execute(plans.plans.update().values(content="{}"))
    r = _check(cli, tmp_path, "c1")
    assert r.exit_code == 2 and "content differs from plan" in r.stderr and plan["hash"][7:19] in r.stderr


def test_candidates_checked_one_at_a_time_are_all_counted(cli, tmp_path, db):
    plan = _setup(cli, tmp_path, "--candidates", "2")
    first = json.loads(_check(cli, tmp_path, "c2").stdout)
    assert first["holdout"]["candidates_considered"] == 2 and first["checks_before"] == 0
    assert first["holdout"]["comparisons"][0]["ci_level"] == 0.975  # Bonferroni for the 2 planned
    _check(cli, tmp_path, "c1")
    third = json.loads(_check(cli, tmp_path, "c2").stdout)  # the best of two, checked again
    assert third["holdout"]["candidates_considered"] == 2 and third["candidates_checked"] == ["c1", "c2"]
    r = _check(cli, tmp_path, "c4")  # a third candidate: not planned, refused (it was a warning)
    assert r.exit_code == 2 and r.stdout == ""
    assert "candidate 'c4' is not planned: the plan preregistered at most 2 candidate(s) and c1, c2" in r.stderr
    log = plans.checks(Ledger(db), plan["hash"])
    assert [c.candidates for c in log] == [["c2"], ["c1"], ["c2"]]
    kept = looks.family_looks(Ledger(db), f"plan:{plan['hash'][7:19]}")  # every printed verdict, kept
    assert [(r.candidate, r.source, r.tasks) for r in kept] == [("c2", "prereg", 80), ("c1", "prereg", 80),
                                                                 ("c2", "prereg", 80)]  # fmt: skip
    assert all(c.checked_at and c.base == "base" for c in log)


def test_a_changed_baseline_is_refused(cli, tmp_path):
    _setup(cli, tmp_path, "--candidates", "2")
    assert _check(cli, tmp_path, "c2").exit_code in (0, 1)  # checked against base (the verdict aside)
    r = cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "c1", "--cand", "c3")
    assert r.exit_code == 2 and "was checked against baseline 'base': a changed baseline ('c1')" in r.stderr


def test_prereg_names_the_preregistered_ungraded_rule(cli, tmp_path):
    _setup(cli, tmp_path, "--ungraded", "as_failures")
    res = json.loads(_check(cli, tmp_path, "c3").stdout)
    sens = res["holdout"]["sensitivity"]
    assert res["ungraded"] == "as_failures" and sens["preregistered"] == "as_failures"
    v = sens["verdicts"]["c3"]
    row = res["holdout"]["comparisons"][0]
    assert row["diff_pp"] == v["as_failures"]["diff_pp"] != v["dropped"]["diff_pp"]
    human = cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base", "--cand", "c3").stdout
    assert "as failures [preregistered]" in human


def test_metric_reward_is_preregistered_and_used(cli, tmp_path):
    pool = tmp_path / "pool.txt"
    ids = task_ids(40)
    pool.write_text("\n".join(ids) + "\n")
    r = cli("prereg", "init", "--pool", str(pool), "--train", "0", "--holdout", "40", "--seed", "2",
            "--metric", "reward", "--out", str(tmp_path / "plan.yaml"))  # fmt: skip
    assert r.exit_code == 0, r.stderr
    assert yaml.safe_load((tmp_path / "plan.yaml").read_text())["metric"] == "reward"
    rng = np.random.default_rng(4)
    rewards = {"base": rng.uniform(0, 1, 40).round(3), "cand": rng.uniform(0, 1, 40).round(3)}
    for name, rs in rewards.items():
        rows = [{"task_id": t, "reward": float(x)} for t, x in zip(ids, rs, strict=True)]
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", rows)), "--run", name).exit_code == 0
    res = json.loads(_check(cli, tmp_path, "cand").stdout)
    row = res["holdout"]["comparisons"][0]
    assert res["holdout"]["metric"] == "reward"
    assert row["diff_pp"] == pytest.approx(100 * (rewards["cand"] - rewards["base"]).mean(), abs=1e-3)
    assert not any("partial rewards" in w for w in res["holdout"]["warnings"])


def test_plans_checks_and_run_admin_on_postgres(cli, pg, tmp_path):
    def pgcli(*args: str):
        return cli(*args, "--db", pg, use_db=False)

    plan = _setup(pgcli, tmp_path, "--candidates", "3")  # c1, c2, c4: a fourth would be refused
    edited = {**plan, "max_candidates": 5}
    edited["hash"] = content_hash(edited)
    (tmp_path / "edited.yaml").write_text(yaml.safe_dump(edited, sort_keys=False))
    r = _check(pgcli, tmp_path, "c1", plan="edited.yaml")
    assert r.exit_code == 2 and "is not registered in this ledger" in r.stderr
    for cand in ("c1", "c2"):
        assert _check(pgcli, tmp_path, cand).exit_code in (0, 1)  # checked (exit 1: no claim holds, a gate)
    third = json.loads(_check(pgcli, tmp_path, "c4").stdout)
    assert third["holdout"]["candidates_considered"] == 3 and third["holdout"]["comparisons"][0]["ci_level"] == 0.983333
    r = pgcli("runs", "delete", "c2")
    assert r.exit_code == 2 and "preregistration check" in r.stderr
    assert pgcli("runs", "rename", "c2", "c2b", "--force").exit_code == 0
    assert pgcli("runs", "delete", "c3").exit_code == 0  # never checked
    log = plans.checks(Ledger(pg), plan["hash"])
    assert [c.candidates for c in log] == [["c1"], ["c2b"], ["c4"]]
    assert sorted(r["name"] for r in json.loads(pgcli("runs", "--json").stdout)) == ["base", "c1", "c2b", "c4"]

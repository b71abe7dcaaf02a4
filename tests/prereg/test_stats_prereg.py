"""`prereg init` / `prereg check`: seeded split, content hash, coverage, held-out-only verdict."""

from __future__ import annotations

import json

import numpy as np
import pytest
import yaml

from trialbook.stats.synthetic import simulate_run, task_ids, write_jsonl

N = 200


@pytest.fixture
def pool(tmp_path):
    path = tmp_path / "pool.txt"
    path.write_text("\n".join(task_ids(N)) + "\n")
    return path


def _init(cli, pool, out, seed="7", *extra):
    return cli("prereg", "init", "--pool", str(pool), "--train", "120", "--holdout", "80", "--seed", seed,
               "--holdout-repeats", "2", "--min-diff", "3", "--out", str(out), *extra)  # fmt: skip


def test_init_writes_a_seeded_hashed_plan(cli, pool, tmp_path):
    r = _init(cli, pool, tmp_path / "plan.yaml")
    assert r.exit_code == 0, r.stderr
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    assert len(plan["train"]) == 120 and len(plan["holdout"]) == 80
    assert not set(plan["train"]) & set(plan["holdout"]) and set(plan["holdout"]) <= set(task_ids(N))
    assert plan["hash"].startswith("sha256:") and plan["min_diff_pp"] == 3 and plan["holdout_repeats"] == 2
    assert ">= 3 pp" in plan["decision_rule"]
    _init(cli, pool, tmp_path / "same.yaml")
    _init(cli, pool, tmp_path / "other.yaml", "8")
    same = yaml.safe_load((tmp_path / "same.yaml").read_text())
    other = yaml.safe_load((tmp_path / "other.yaml").read_text())
    assert same["holdout"] == plan["holdout"] and other["holdout"] != plan["holdout"]
    again = _init(cli, pool, tmp_path / "plan.yaml")
    assert again.exit_code == 2 and "already exists" in again.stderr


def _runs(cli, tmp_path, plan, cand_attempts=2):
    """Candidate much better on the train tasks only; the same system on held-out tasks."""
    rng = np.random.default_rng(0)
    ids = task_ids(N)
    probs = rng.beta(0.5, 0.5, N)
    train = np.isin(ids, plan["train"])
    better = np.where(train, np.clip(probs + 0.3, 0, 1), probs)
    for name, p, k in (("base", probs, 2), ("cand", better, cand_attempts), ("cand2", probs, 2)):
        path = write_jsonl(tmp_path / f"{name}.jsonl", simulate_run(p, k, rng))
        assert cli("import", "jsonl", str(path), "--run", name).exit_code == 0


def test_check_gives_the_held_out_verdict(cli, pool, tmp_path):
    _init(cli, pool, tmp_path / "plan.yaml")
    plan = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    _runs(cli, tmp_path, plan)
    r = cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base", "--cand", "cand", "--json")
    assert r.exit_code == 1, r.stderr  # no claim holds: the gate fails, after the full output
    res = json.loads(r.stdout)
    (held,) = res["holdout"]["comparisons"]
    assert held["tasks_paired"] == 80 and res["verdict"] == {"cand": False}
    (pool_row,) = res["in_pool"]["comparisons"]
    assert pool_row["tasks_paired"] == 120 and pool_row["claim"] is True  # the in-pool gain is not the test
    assert "secondary" in res["in_pool"]["label"]
    assert res["holdout"]["min_diff_pp"] == 3
    human = cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base", "--cand", "cand")
    assert "preregistered verdict" in human.stdout and "no claim" in human.stdout and "secondary" in human.stdout


def test_check_refuses(cli, pool, tmp_path):
    _init(cli, pool, tmp_path / "plan.yaml")
    plan_text = (tmp_path / "plan.yaml").read_text()
    plan = yaml.safe_load(plan_text)
    _runs(cli, tmp_path, plan, cand_attempts=1)
    check = ("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base")

    r = cli(*check, "--cand", "cand")
    assert r.exit_code == 2 and "does not cover the plan" in r.stderr and "fewer than 2 graded" in r.stderr
    r = cli(*check, "--cand", "cand2", "--cand", "base2")
    assert r.exit_code == 2 and "at most 1" in r.stderr

    (tmp_path / "plan.yaml").write_text(plan_text.replace("min_diff_pp: 3.0", "min_diff_pp: 1.0"))
    r = cli(*check, "--cand", "cand2")
    assert r.exit_code == 2 and "edited after it was hashed" in r.stderr

    (tmp_path / "plan.yaml").write_text("seed: [1, 2\n")
    r = cli(*check, "--cand", "cand2")
    assert r.exit_code == 2 and "not YAML" in r.stderr

    del plan["decision_rule"]
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    r = cli(*check, "--cand", "cand2")
    assert r.exit_code == 2 and "lacks the field 'decision_rule'" in r.stderr
    assert r.stderr.count("\n") == 1 and r.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--train", "150", "--holdout", "80"), "exceeds the pool's 200 tasks"),
        (("--train", "10", "--holdout", "0"), "--holdout must be at least 1"),
        (("--train", "10", "--holdout", "10", "--holdout-attempts", "0"), "--holdout-attempts"),
    ],
)
def test_init_bad_input(cli, pool, tmp_path, args, message):
    r = cli("prereg", "init", "--pool", str(pool), "--seed", "1", "--out", str(tmp_path / "p.yaml"), *args)
    assert r.exit_code == 2 and message in r.stderr
    assert not (tmp_path / "p.yaml").exists()

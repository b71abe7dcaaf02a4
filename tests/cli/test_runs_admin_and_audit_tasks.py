"""Issue 15: `runs delete` / `runs rename` (transactional, refusing runs a preregistration check used),
`audit` with no verifier logs, and `audit --write-tasks` feeding `compare --exclude-tasks`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from paths import TEST_DATA
from trialbook.ledger.store import Ledger
from trialbook.stats.synthetic import simulate_run, task_ids, write_jsonl

FIXTURES = TEST_DATA / "audit"


def _jsonl(cli, tmp_path: Path, name: str, n: int = 40, seed: int = 0) -> None:
    lines = simulate_run(np.random.default_rng(seed).beta(1, 1, n), 2, np.random.default_rng(seed + 1))
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0


def names(cli) -> list[str]:
    return [r["name"] for r in json.loads(cli("runs", "--json").stdout)]


def test_delete_and_rename(cli, tmp_path, db):
    _jsonl(cli, tmp_path, "a")
    _jsonl(cli, tmp_path, "b", seed=3)
    steps = tmp_path / "s.jsonl"
    steps.write_text('{"step": 0, "kl": 0.1}\n')
    assert cli("import", "steps", str(steps), "--run", "a").exit_code == 0
    r = cli("runs", "rename", "a", "b")
    assert r.exit_code == 2 and "run 'b' already exists" in r.stderr
    assert cli("runs", "rename", "a", "a2").exit_code == 0 and names(cli) == ["a2", "b"]
    assert cli("runs", "rename", "a2", "bad name").exit_code == 2
    r = cli("runs", "delete", "a2")
    assert r.exit_code == 0 and "80 trials, 1 steps" in r.stderr and names(cli) == ["b"]
    with Ledger(db).engine.connect() as conn:  # nothing of it left behind
        orphans = "SELECT count(*) FROM trials WHERE run_id NOT IN (SELECT id FROM runs)"
        assert conn.exec_driver_sql(orphans).scalar() == 0
        assert conn.exec_driver_sql("SELECT count(*) FROM steps").scalar() == 0
    r = cli("runs", "delete", "a2")
    assert r.exit_code == 2 and "no run named 'a2'" in r.stderr


def test_runs_a_plan_check_used_are_protected(cli, tmp_path):
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(task_ids(40)) + "\n")
    assert cli("prereg", "init", "--pool", str(pool), "--train", "0", "--holdout", "40", "--seed", "1",
               "--out", str(tmp_path / "plan.yaml")).exit_code == 0  # fmt: skip
    _jsonl(cli, tmp_path, "base")
    _jsonl(cli, tmp_path, "cand", seed=5)
    _jsonl(cli, tmp_path, "other", seed=7)
    checked = cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base", "--cand", "cand")
    assert checked.exit_code == 1 and "no candidate's preregistered claim holds" in checked.stderr  # logged, no claim
    for args in (("delete", "cand"), ("rename", "cand", "cand-renamed"), ("delete", "base")):
        r = cli("runs", *args)
        assert r.exit_code == 2 and "preregistration check" in r.stderr and "--force" in r.stderr, args
    assert cli("runs", "delete", "other").exit_code == 0
    assert cli("runs", "rename", "cand", "c2", "--force").exit_code == 0
    res = json.loads(cli("prereg", "check", str(tmp_path / "plan.yaml"), "--base", "base", "--cand", "c2",
                         "--json").stdout)  # fmt: skip
    assert res["candidates_checked"] == ["c2"]  # the log followed the forced rename: still one candidate


def test_audit_without_verifier_logs_says_so(cli, tmp_path):
    _jsonl(cli, tmp_path, "plain")
    r = cli("audit", "plain")
    assert r.exit_code == 0 and "no verifier logs: nothing audited" in r.stdout
    data = json.loads(cli("audit", "plain", "--json").stdout)
    assert data["status"] == "no_verifier_logs" and data["with_log"] == 0
    # the list it writes (no task) still feeds `compare --exclude-tasks`: nothing left out
    _jsonl(cli, tmp_path, "other", seed=3)
    out = tmp_path / "none.txt"
    assert cli("audit", "plain", "--write-tasks", str(out)).exit_code == 0
    assert [x for x in out.read_text().splitlines() if not x.startswith("#")] == []
    res = json.loads(cli("compare", "plain", "other", "--exclude-tasks", str(out), "--json").stdout)
    assert res["comparisons"][0]["tasks_paired"] == 40
    assert f"excluded before pairing: 0 tasks listed in {out} (0 listed)" in res["warnings"]


def test_audit_write_tasks_feeds_exclude_tasks(cli, tmp_path):
    for run in ("run_a", "run_b"):
        r = cli("import", "swebench", str(FIXTURES / run / "results.json"), "--instances",
                str(FIXTURES / "instances.jsonl"), "--logs", str(FIXTURES / run), "--run", run[-1])  # fmt: skip
        assert r.exit_code == 0, r.stderr
    out = tmp_path / "artifacts.txt"
    r = cli("audit", "a", "--write-tasks", str(out), "--json")
    assert r.exit_code == 0
    data = json.loads(r.stdout)
    assert data["status"] == "audited" and data["artifact_tasks"]
    listed = [x for x in out.read_text().splitlines() if not x.startswith("#")]
    assert listed == data["artifact_tasks"]
    res = json.loads(cli("compare", "a", "b", "--exclude-tasks", str(out), "--json").stdout)
    assert any(f"excluded before pairing: {len(listed)} tasks listed in {out}" in w for w in res["warnings"])

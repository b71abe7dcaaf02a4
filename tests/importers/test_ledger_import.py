"""Foundation: importers, ledger transactions, runs/show/export, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import INSTANCES, RESULTS, SWE

SWEAGENT = RESULTS / "20240620_sweagent_claude3.5sonnet.json"


def show(cli, run: str) -> dict:
    res = cli("show", run, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def runs(cli) -> list[dict]:
    res = cli("runs", "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_sweagent_import_matches_published(cli):
    res = cli("import", "swebench", str(SWEAGENT), "--instances", str(INSTANCES), "--run", "sweagent")
    assert res.exit_code == 0, res.stderr
    s = show(cli, "sweagent")
    assert (s["trials"], s["judged"], s["resolved"], s["resolved_pct"]) == (500, 500, 168, 33.6)
    assert s["tags"] == {"no_generation": 11, "no_logs": 3}
    assert s["outcomes"] == {"unresolved": 332, "resolved": 168}
    assert sum(r["trials"] for r in s["by_repo"].values()) == 500
    assert s["by_repo"]["django/django"]["trials"] == 231


@pytest.mark.parametrize("results", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_every_shared_system_rate_equals_published(cli, results: Path):
    published = json.loads(results.read_text())["published_pct_resolved"]
    assert cli("import", "swebench", str(results), "--instances", str(INSTANCES), "--run", "x").exit_code == 0
    assert show(cli, "x")["resolved_pct"] == pytest.approx(published, abs=1e-9)


def test_logs_attach_reports_and_test_statuses(cli, db):
    logs = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
    res = cli("import", "swebench", str(logs / "results.json"), "--instances", str(INSTANCES), "--logs", str(logs))
    assert res.exit_code == 0, res.stderr
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    run = ledger.get_run(ledger.run_names()[0])
    trials = {t.task_id: t for t in ledger.trial_rows(run.id)}
    t = trials["astropy__astropy-12907"]
    report = json.loads((logs / "astropy__astropy-12907" / "report.json").read_text())["astropy__astropy-12907"]
    f2p_fail = report["tests_status"]["FAIL_TO_PASS"]["failure"]
    assert t.tests and f2p_fail and all(t.tests["FAIL_TO_PASS"][name] == "fail" for name in f2p_fail)
    assert ledger.artifact(t.id, "test_output.txt") == (logs / "astropy__astropy-12907/test_output.txt").read_text()
    with_report = [p.name for p in logs.iterdir() if (p / "report.json").is_file()]
    assert sum(1 for x in trials.values() if x.tests is not None) == len(with_report)


def test_jsonl_round_trip_is_exact(cli, tmp_path):
    rows = [
        {"task_id": "django__django-1", "outcome": "resolved", "stack": {"image": "official", "engine": "vllm"}},
        {"task_id": "django__django-1", "resolved": False, "tokens": 1200, "turns": 31, "duration_s": 12.5},
        {"task_id": "sympy__sympy-2", "reward": 0.57, "step": 3, "wv": 2, "epoch": 1, "note": "kept in extra"},
        {"task_id": "sympy__sympy-2", "outcome": "agent_timeout", "reward": 1.0, "exception": "AgentTimeoutError"},
        {"task_id": "x", "attempt": 5, "outcome": "verifier_timeout", "repo": "me/x",
         "tests": {"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "fail"}}},
    ]  # fmt: skip
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    assert cli("import", "jsonl", str(src), "--run", "a").exit_code == 0
    assert cli("export", "a", "--jsonl", str(tmp_path / "a.jsonl")).exit_code == 0
    assert cli("import", "jsonl", str(tmp_path / "a.jsonl"), "--run", "b").exit_code == 0
    assert cli("export", "b", "--jsonl", str(tmp_path / "b.jsonl")).exit_code == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    exported = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [e["attempt"] for e in exported] == [0, 1, 0, 1, 5]
    assert exported[2]["note"] == "kept in extra" and exported[2]["outcome"] == "unresolved"
    a, b = show(cli, "a"), show(cli, "b")
    for key in ("trials", "judged", "resolved", "outcomes", "by_repo", "tags", "stack", "mean_reward"):
        assert a[key] == b[key]
    # the agent_timeout trial with reward 1.0 counts as resolved; verifier_timeout is not judged
    assert (a["trials"], a["judged"], a["resolved"]) == (5, 4, 2)
    assert a["stack"] == {"image": "official", "engine": "vllm"}


def test_corrupted_line_leaves_no_run_behind(cli, tmp_path):
    good = write_jsonl(tmp_path / "good.jsonl", [{"task_id": "t1", "resolved": True}])
    assert cli("import", "jsonl", str(good), "--run", "keep").exit_code == 0
    lines = [json.dumps({"task_id": f"t{i}", "resolved": i % 2 == 0}) for i in range(50_000)]
    lines[30_000] = '{"task_id": "t30000", "resolved": tru'
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    res = cli("import", "jsonl", str(bad), "--run", "broken")
    assert res.exit_code == 2
    assert "line 30001" in res.stderr and res.stderr.count("\n") == 1
    assert [r["name"] for r in runs(cli)] == ["keep"]
    assert show(cli, "keep")["trials"] == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"task_id": "a", "outcome": "passed"}\n', "unknown outcome 'passed'"),
        ("", "no trials"),
        ('{"task_id": "a"}\n', "line 1: needs one of"),
        ('{"task_id": "a", "resolved": true}\n{"task_id": "a", "attempt": 0, "resolved": true}\n', "duplicate attempt"),
        ('{"task_id": "a", "resolved": "yes"}\n', "resolved must be true or false"),
        ("[1, 2]\n", "expected a JSON object"),
    ],
)
def test_bad_jsonl_is_one_line_exit_2_ledger_untouched(cli, tmp_path, content, message):
    assert cli("import", "jsonl", str(write_jsonl(tmp_path / "ok.jsonl", [{"task_id": "a", "reward": 1}])),
               "--run", "keep").exit_code == 0  # fmt: skip
    before = runs(cli)
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    res = cli("import", "jsonl", str(path), "--run", "bad")
    assert res.exit_code == 2 and message in res.stderr and res.stderr.count("\n") == 1
    assert runs(cli) == before


def test_duplicate_run_name_refused_unless_replace(cli, tmp_path):
    one = write_jsonl(tmp_path / "one.jsonl", [{"task_id": "a", "resolved": True}])
    two = write_jsonl(
        tmp_path / "two.jsonl", [{"task_id": "a", "resolved": False}, {"task_id": "b", "resolved": False}]
    )
    assert cli("import", "jsonl", str(one), "--run", "r").exit_code == 0
    res = cli("import", "jsonl", str(two), "--run", "r")
    assert res.exit_code == 2 and "already exists" in res.stderr
    assert show(cli, "r")["resolved"] == 1
    assert cli("import", "jsonl", str(two), "--run", "r", "--replace").exit_code == 0
    s = show(cli, "r")
    assert (s["trials"], s["resolved"]) == (2, 0)
    assert len(runs(cli)) == 1


def test_swebench_bad_inputs(cli, tmp_path):
    res = cli("import", "swebench", str(tmp_path / "nope.json"), "--instances", str(INSTANCES))
    assert res.exit_code == 2 and "no such file" in res.stderr
    stranger = tmp_path / "r.json"
    stranger.write_text(json.dumps({"resolved": ["django__django-11099", "not__an-instance-1"]}))
    res = cli("import", "swebench", str(stranger), "--instances", str(INSTANCES))
    assert res.exit_code == 2 and "not__an-instance-1" in res.stderr and "not in" in res.stderr
    garbage = tmp_path / "g.json"
    garbage.write_text("{not json")
    assert cli("import", "swebench", str(garbage), "--instances", str(INSTANCES)).exit_code == 2
    assert runs(cli) == []


def test_unknown_run_and_unwritable_export(cli, tmp_path):
    write_jsonl(tmp_path / "a.jsonl", [{"task_id": "a", "resolved": True}])
    assert cli("import", "jsonl", str(tmp_path / "a.jsonl"), "--run", "a").exit_code == 0
    res = cli("show", "ghost")
    assert res.exit_code == 2 and "no run named 'ghost'" in res.stderr
    res = cli("export", "a", "--jsonl", str(tmp_path / "missing-dir" / "out.jsonl"))
    assert res.exit_code == 2 and "cannot write" in res.stderr


def test_db_from_environment(cli, tmp_path, monkeypatch):
    path = tmp_path / "env.db"
    monkeypatch.setenv("TRIALBOOK_DB", str(path))
    write_jsonl(tmp_path / "a.jsonl", [{"task_id": "a", "resolved": True}])
    assert cli("import", "jsonl", str(tmp_path / "a.jsonl"), "--run", "a", use_db=False).exit_code == 0
    assert path.is_file()
    from trialbook.ledger.store import Ledger

    assert Ledger(str(path)).run_names() == ["a"]
    with Ledger(str(path)).engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"


def test_worker_process_path_numbers_attempts_and_rolls_back(cli, tmp_path, monkeypatch):
    """Big files are checked in a worker process: same rows, same errors, same rollback."""
    import trialbook.importers.blocks as blocks

    monkeypatch.setattr(blocks, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(blocks, "BLOCK_BYTES", 4000)
    rows = [{"task_id": f"t{i % 7}", "resolved": i % 3 == 0, "tokens": i} for i in range(5000)]
    rows[4321] = {"task_id": "t1", "attempt": 10_000, "outcome": "agent_timeout"}
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    assert cli("import", "jsonl", str(path), "--run", "big").exit_code == 0
    s = show(cli, "big")
    assert (s["trials"], s["tasks"]) == (5000, 7) and s["outcomes"]["agent_timeout"] == 1
    out = tmp_path / "out.jsonl"
    assert cli("export", "big", "--jsonl", str(out)).exit_code == 0
    exported = [json.loads(line) for line in out.read_text().splitlines()]
    earlier: dict[str, int] = {}  # the rule, stated plainly: an attempt defaults to the count of earlier lines
    expected = []
    for r in rows:
        expected.append(r.get("attempt", earlier.get(r["task_id"], 0)))
        earlier[r["task_id"]] = earlier.get(r["task_id"], 0) + 1
    assert [e["attempt"] for e in exported] == expected

    lines = path.read_text().splitlines()
    lines[3500] = '{"task_id": "t0", "resolved": tru'
    path.write_text("\n".join(lines) + "\n")
    res = cli("import", "jsonl", str(path), "--run", "broken")
    assert res.exit_code == 2 and "line 3501" in res.stderr
    assert [r["name"] for r in runs(cli)] == ["big"]

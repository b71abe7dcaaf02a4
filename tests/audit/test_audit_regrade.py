"""`regrade` and `audit` through the CLI, on the real official logs and on signature fixtures."""

from __future__ import annotations

import json
from pathlib import Path

from paths import INSTANCES, SWE, TEST_DATA

REAL = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
FIXTURES = TEST_DATA / "audit"


def _import(cli, results: Path, instances: Path, logs: Path, run: str) -> None:
    res = cli("import", "swebench", str(results), "--instances", str(instances), "--logs", str(logs), "--run", run)
    assert res.exit_code == 0, res.stderr


def _json(cli, *args: str) -> dict:
    res = cli(*args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_regrade_agrees_with_every_official_report(cli):
    _import(cli, REAL / "results.json", INSTANCES, REAL, "sweagent")
    out = _json(cli, "regrade", "sweagent")
    with_report = len(list(REAL.glob("*/report.json")))
    assert out["trials"] == 500
    assert out["regraded"] == with_report
    assert out["agree"] == with_report
    assert out["disagreements"] == []
    assert out["agree_but_tests_differ"] == 0  # per-test verdicts match report.json's lists too


def test_regrade_lists_a_disagreement_with_the_tests_behind_it(cli):
    _import(cli, FIXTURES / "run_b" / "results.json", FIXTURES / "instances.jsonl", FIXTURES / "run_b", "b")
    out = _json(cli, "regrade", "b")
    assert (out["regraded"], out["agree"]) == (2, 1)
    [d] = out["disagreements"]
    assert d["task_id"] == "pallets__flask-90005"
    assert (d["recorded"], d["regraded"]) == ("resolved", "unresolved")
    assert d["tests"] == [
        {"group": "FAIL_TO_PASS", "test": "tests/test_basic.py::test_fix5", "recorded": None, "regraded": "fail"}
    ]
    human = cli("regrade", "b")
    assert human.exit_code == 0 and "pallets__flask-90005" in human.stdout


def test_regrade_unknown_run_is_a_user_error(cli):
    _import(cli, FIXTURES / "run_a" / "results.json", FIXTURES / "instances.jsonl", FIXTURES / "run_a", "a")
    res = cli("regrade", "nope")
    assert res.exit_code == 2
    assert "no run named 'nope'" in res.stderr


def _audit_fixture(cli) -> dict:
    _import(cli, FIXTURES / "run_a" / "results.json", FIXTURES / "instances.jsonl", FIXTURES / "run_a", "a")
    _import(cli, FIXTURES / "run_b" / "results.json", FIXTURES / "instances.jsonl", FIXTURES / "run_b", "b")
    return _json(cli, "audit", "a", "--vs", "b")


def test_audit_finds_each_signature_in_its_log(cli):
    out = _audit_fixture(cli)
    found = {row["task_id"]: row["signatures"] for row in out["signature_trials"]}
    assert found == {
        "sphinx-doc__sphinx-90001": ["no_per_test_lines"],
        "psf__requests-90002": ["fixture_recursion", "setup_error"],
        "psf__requests-90003": ["pytest_raises_string_form"],
        "pallets__flask-90005": ["network_failure"],
        "pallets__flask-90006": ["verifier_timeout"],
        "pallets__flask-90007": ["patch_apply_failed"],
        "pallets__flask-90008": ["collection_error"],
    }
    assert out["by_signature"]["fixture_recursion"]["trials"] == 1


def test_audit_counts_p2p_penalties_and_the_share_artifacts_explain(cli):
    out = _audit_fixture(cli)
    pen = out["p2p_penalties"]
    assert pen["count"] == 3  # 90002 (httpbin), 90003 (pytest.raises), 90004 (a real regression)
    assert pen["by_repo"] == {"psf/requests": 2, "pallets/flask": 1}
    failed = {(r["task_id"], r["test"]) for r in pen["by_test"]}
    assert ("pallets__flask-90004", "tests/test_basic.py::test_regressed") in failed
    assert out["by_signature"]["fixture_recursion"]["share_of_p2p_penalties"] == round(1 / 3, 4)
    assert out["by_signature"]["no_per_test_lines"]["share_of_p2p_penalties"] == 0.0
    ex = out["explained_by_artifacts"]
    assert (ex["p2p_penalties"], ex["of_p2p_penalties"]) == (2, 3)
    human = cli("audit", "a")
    assert human.exit_code == 0
    assert human.stdout.strip().splitlines()[-1] == "P2P penalties explained by known artifacts: 2/3 (66.7%)"


def test_audit_suspect_tests(cli):
    out = _audit_fixture(cli)
    rows = {(r["reason"], r.get("task_id"), r["test"]): r for r in out["suspect_tests"]}
    most = rows[("fails_in_most_trials", None, "tests/test_basic.py::test_shared_broken")]
    assert (most["failed"], most["trials"]) == (2, 3)
    assert ("fails_here_passes_in:b", "pallets__flask-90004", "tests/test_basic.py::test_regressed") in rows
    # test_ok passes everywhere it runs: never suspect
    assert not any(test.endswith("test_ok") for _, _, test in rows)
    # a test that ran once is not "failing in most trials" by default
    assert all(r["trials"] >= 2 for r in out["suspect_tests"] if r["reason"] == "fails_in_most_trials")


def test_audit_on_real_logs_finds_the_sphinx_and_requests_artifacts(cli):
    _import(cli, REAL / "results.json", INSTANCES, REAL, "sweagent")
    out = _json(cli, "audit", "sweagent")
    by_task = {r["task_id"]: r["signatures"] for r in out["signature_trials"]}
    sphinx = [t for t, s in by_task.items() if t.startswith("sphinx-doc") and "no_per_test_lines" in s]
    assert len(sphinx) >= 5  # the June-2024 sphinx logs ran without -rA
    assert "fixture_recursion" in by_task["psf__requests-5414"]
    assert by_task["psf__requests-1142"] == ["patch_apply_failed"]  # only run_instance.log survives


def test_audit_bad_options(cli):
    _import(cli, FIXTURES / "run_b" / "results.json", FIXTURES / "instances.jsonl", FIXTURES / "run_b", "b")
    assert cli("audit", "b", "--vs", "missing").exit_code == 2
    assert cli("audit", "b", "--min-trials", "0").exit_code == 2


def test_parsing_in_worker_processes_gives_the_same_answers(cli, db, monkeypatch):
    from trialbook.audit import regrade
    from trialbook.audit.failures import audit_run
    from trialbook.ledger.store import Ledger

    _import(cli, REAL / "results.json", INSTANCES, REAL, "sweagent")
    ledger = Ledger(db)
    serial = (regrade.regrade_run(ledger, "sweagent", jobs=1), audit_run(ledger, "sweagent", jobs=1))
    monkeypatch.setattr(regrade, "PARALLEL_MIN", 1)
    parallel = (regrade.regrade_run(ledger, "sweagent", jobs=2), audit_run(ledger, "sweagent", jobs=2))
    assert parallel == serial
    assert cli("regrade", "sweagent", "--jobs", "0").exit_code == 2

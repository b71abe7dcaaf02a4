"""Task loading, the error policy table and the no-daemon path (no Docker needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from paths import EXAMPLES
from trialbook.errors import UserError
from trialbook.harness.policy import POLICY, policy_rows, rule_for
from trialbook.records import OUTCOMES, Outcome
from trialbook.tasks import load_task, load_tasks
from trialbook.tasks.loader import tree_hash

PITFALLS = {"plain-bugfix", "uncommitted-test-config", "hung-verifier", "slow-solution", "proxy-env", "flaky-p2p"}


def test_examples_load_with_their_limits_and_test_lists():
    specs, errors = load_tasks(EXAMPLES)
    assert errors == []
    by_id = {s.task_id: s for s in specs}
    assert set(by_id) == PITFALLS
    assert by_id["hung-verifier"].verifier_timeout == 3
    assert by_id["slow-solution"].agent_timeout == 3
    assert by_id["plain-bugfix"].fail_to_pass == ["tests/test_stats.py::test_median_even"]
    assert all(not s.allow_network and s.image is None and s.dockerfile.is_file() for s in specs)
    for s in specs:
        assert "FROM trialbook-base:bookworm" in s.dockerfile.read_text()


def _copy(tmp_path: Path, name: str = "plain-bugfix") -> Path:
    dest = tmp_path / "tasks" / name
    shutil.copytree(EXAMPLES / "plain-bugfix", dest)
    return dest


def test_broken_folders_become_one_line_errors_for_that_task_only(tmp_path):
    _copy(tmp_path, "good")
    (_copy(tmp_path, "no-test-sh") / "tests" / "test.sh").unlink()
    (_copy(tmp_path, "bad-toml") / "task.toml").write_text("[agent\ntimeout_sec = 1\n")
    (_copy(tmp_path, "bad-timeout") / "task.toml").write_text("[agent]\ntimeout_sec = -5\n")
    (_copy(tmp_path, "no-env") / "environment" / "Dockerfile").unlink()
    specs, errors = load_tasks(tmp_path / "tasks")
    assert [s.task_id for s in specs] == ["good"]
    messages = {e.task_id: e.message for e in errors}
    assert messages["no-test-sh"] == "missing tests/test.sh"
    assert messages["bad-toml"].startswith("invalid task.toml:")
    assert messages["bad-timeout"].startswith("invalid task.toml: agent.timeout_sec")
    assert "docker_image" in messages["no-env"]
    assert all("\n" not in m for m in messages.values())


def test_tasks_filter_and_unknown_ids(tmp_path):
    specs, _ = load_tasks(EXAMPLES, ["proxy-env", "flaky-p2p"])
    assert sorted(s.task_id for s in specs) == ["flaky-p2p", "proxy-env"]
    with pytest.raises(UserError, match="unknown task"):
        load_tasks(EXAMPLES, ["nope"])
    with pytest.raises(UserError, match="no such tasks directory"):
        load_tasks(tmp_path / "missing")


def test_verifier_hash_follows_the_tests_folder(tmp_path):
    task = _copy(tmp_path)
    before = load_task(task).verifier_hash
    assert before == tree_hash(task / "tests")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    assert load_task(task).verifier_hash == before  # the solution is not part of the verifier
    with (task / "tests" / "test.sh").open("a") as f:
        f.write("# changed\n")
    assert load_task(task).verifier_hash != before


def test_config_json_lists_may_be_json_strings(tmp_path):
    task = _copy(tmp_path)
    (task / "tests" / "config.json").write_text(json.dumps({"FAIL_TO_PASS": json.dumps(["a"]), "PASS_TO_PASS": []}))
    spec = load_task(task)
    assert spec.fail_to_pass == ["a"] and spec.pass_to_pass == []


def test_policy_agrees_with_the_outcome_table():
    for name, rule in POLICY.items():
        if rule.retry:  # only infra failures are retried, and they are never graded
            assert rule.outcome == Outcome.INFRA_ERROR and OUTCOMES[rule.outcome].retry, name
    assert rule_for("VerifierTimeoutError").outcome == Outcome.VERIFIER_TIMEOUT
    assert not rule_for("VerifierTimeoutError").retry
    assert rule_for("SomethingNew").outcome == Outcome.INFRA_ERROR and not rule_for("SomethingNew").retry
    assert {"DaemonError", "ImageBuildError", "ContainerStartError"} <= {n for n, r in POLICY.items() if r.retry}
    rows = {r["exception"]: r for r in policy_rows()}
    assert rows["AgentTimeoutError"]["graded"] is True
    assert rows["VerifierTimeoutError"]["graded"] is False


def test_policy_command_json(cli):
    res = cli("policy", "--json", use_db=False)
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert {r["exception"] for r in rows} >= set(POLICY)


def test_commands_without_a_daemon_explain_how_to_get_one(cli, monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    res = cli("quickstart")
    assert res.exit_code == 2
    assert "docker-up.sh" in res.stderr and "Docker Engine" in res.stderr
    res = cli("run", str(EXAMPLES), "--agent", "nop", "--run", "x")
    assert res.exit_code == 2 and "docker-up.sh" in res.stderr


def test_bad_usage_is_exit_2(cli, tmp_path):
    res = cli("run", str(EXAMPLES), "--agent", "gpt-nothing", "--run", "x")
    assert res.exit_code == 2 and "unknown agent" in res.stderr
    res = cli("run", str(tmp_path / "none"), "--agent", "nop", "--run", "x")
    assert res.exit_code == 2 and "no such tasks directory" in res.stderr

"""The error policy table and the no-daemon path (no Docker needed)."""

from __future__ import annotations

import json

from paths import EXAMPLES
from trialbook.outcomes import OUTCOMES, POLICY, Outcome, policy_rows, rule_for


def test_policy_agrees_with_the_outcome_table():
    for name, rule in POLICY.items():
        if rule.retry:  # only infra failures are retried, and they are never graded
            assert rule.outcome == Outcome.INFRA_ERROR and OUTCOMES[rule.outcome].retry, name
    assert rule_for("VerifierTimeoutError").outcome == Outcome.VERIFIER_TIMEOUT
    assert not rule_for("VerifierTimeoutError").retry
    assert rule_for("SomethingNew").outcome == Outcome.INFRA_ERROR and not rule_for("SomethingNew").retry
    assert {"DaemonError", "ImageBuildError", "ContainerStartError"} <= {n for n, r in POLICY.items() if r.retry}
    rows = {r.exception: r for r in policy_rows()}
    assert rows["AgentTimeoutError"].graded is True
    assert rows["VerifierTimeoutError"].graded is False


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

"""The unified outcome rules (trialbook.outcomes), pinned on the cases where the old copies disagreed.

P2P regression had three definitions: grading (every F2P passes, some P2P fails; vacuously true without
F2P tests), audit (the same, but only with F2P tests) and the training report (unresolved and a
`LIKE` match for a failing status after `"PASS_TO_PASS":{` in the stored JSON, F2P ignored). The one
rule now: at least one F2P test, none not passing, and some P2P test not passing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trialbook.audit.failures import p2p_penalty
from trialbook.audit.regrade import Evidence
from trialbook.importers.jsonl import import_jsonl
from trialbook.ledger.rows import TaskLists, TrialRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import (
    NOT_PASSING,
    POLICY,
    RETRYABLE,
    Outcome,
    classify,
    error_kind,
    p2p_regression,
    parse_reward,
    pick_reward,
    rule_for,
)
from trialbook.training.load import load_trajectories
from trialbook.verify.grading import grade_parsed

F2P, P2P = "FAIL_TO_PASS", "PASS_TO_PASS"

# (name, tests, the one rule, the old training/load LIKE rule for an unresolved trial, old grading rule)
CASES: list[tuple[str, dict | None, bool, bool, bool]] = [
    ("f2p pass, p2p fail", {F2P: {"a": "pass"}, P2P: {"b": "pass", "c": "fail"}}, True, True, True),
    ("f2p fail, p2p fail", {F2P: {"a": "fail"}, P2P: {"b": "fail"}}, False, True, False),
    ("f2p error, p2p missing", {F2P: {"a": "error"}, P2P: {"b": "missing"}}, False, True, False),
    ("no f2p tests, p2p error", {P2P: {"b": "error"}}, False, True, True),
    ("empty f2p, p2p fail", {F2P: {}, P2P: {"b": "fail"}}, False, True, True),
    ("f2p skipped, p2p fail", {F2P: {"a": "skipped"}, P2P: {"b": "fail"}}, True, True, True),
    ("p2p skipped only", {F2P: {"a": "pass"}, P2P: {"b": "skipped"}}, False, False, False),
    ("p2p missing", {F2P: {"a": "pass"}, P2P: {"b": "missing"}}, True, True, True),
    # a group sorted after PASS_TO_PASS (lower case sorts after upper case) holding "fail": LIKE misread it
    ("fail in a later group", {F2P: {"a": "pass"}, P2P: {"b": "pass"}, "raw": {"c": "fail"}}, False, True, False),
    ("quoted status in a name", {F2P: {'odd:"fail"': "pass"}, P2P: {'x[:"fail"]': "pass"}}, False, False, False),
    ("no tests", None, False, False, False),
]


def _old_like(tests: dict | None) -> bool:
    """What training/load's LIKE pattern said (canonical JSON, sorted keys), for an unresolved trial."""
    if tests is None:
        return False
    text = json.dumps(tests, sort_keys=True, separators=(",", ":"))
    tail = text.split('"PASS_TO_PASS":{', 1)
    return len(tail) == 2 and any(f':"{s}"' in tail[1] for s in NOT_PASSING)


def _old_grading(tests: dict | None) -> bool:
    """What verify/grading computed: no F2P status not passing (true with no F2P test), some P2P not passing."""
    tests = tests or {}
    f2p_ok = not any(s in NOT_PASSING for s in tests.get(F2P, {}).values())
    return f2p_ok and any(s in NOT_PASSING for s in tests.get(P2P, {}).values())


@pytest.mark.parametrize(("name", "tests", "rule", "old_like", "old_grading"), CASES, ids=[c[0] for c in CASES])
def test_p2p_regression_is_the_strict_rule(name, tests, rule, old_like, old_grading):
    assert p2p_regression(tests) is rule
    # the cases really are ones where the old copies disagreed
    assert _old_like(tests) is old_like
    assert _old_grading(tests) is old_grading


def test_grading_and_audit_apply_the_same_rule():
    # grading: a task listing no F2P test and a failing P2P test is no longer tagged p2p_regression
    status_map = {"t_old": "FAILED"}
    assert not grade_parsed(status_map, None, TaskLists("example/repo", [], ["t_old"])).p2p_regression
    assert grade_parsed(
        {"t_new": "PASSED", **status_map}, None, TaskLists("example/repo", ["t_new"], ["t_old"])
    ).p2p_regression
    for _, tests, rule, _, _ in CASES:
        for outcome, graded in (("unresolved", True), ("agent_timeout", True), ("verifier_timeout", False)):
            trial = TrialRow(1, 1, "a__b-1", 0, None, outcome, 0.0, *[None] * 8, tests, None, None, None, None)
            ev = Evidence(trial, None, None, None, None, {})
            assert p2p_penalty(ev) is (rule and graded)


def _ledger_p2p(ledger: Ledger, tmp_path: Path) -> dict[str, bool]:
    lines = []
    for k, (_, tests, _, _, _) in enumerate(CASES):
        for outcome, reward in (("unresolved", 0.0), ("resolved", 1.0), ("verifier_timeout", None)):
            row = {"task_id": f"case__c-{k}-{outcome}", "step": 1, "wv": 0, "epoch": 0, "tests": tests}
            lines.append(json.dumps({**row, "outcome": outcome, "reward": reward}))
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n")
    import_jsonl(ledger, path, "cases", kind="train")
    data = load_trajectories(ledger, ledger.get_run("cases").id)
    return {data.task_names[t]: bool(p) for t, p in zip(data.task, data.p2p, strict=True)}


def _expected() -> dict[str, bool]:
    out = {}
    for k, (_, _, rule, _, _) in enumerate(CASES):
        out[f"case__c-{k}-unresolved"] = rule
        out[f"case__c-{k}-resolved"] = rule  # the rule reads the tests; the old one also needed reward < 1
        out[f"case__c-{k}-verifier_timeout"] = False  # not graded
    return out


def test_training_report_sql_applies_the_same_rule_sqlite(tmp_path):
    assert _ledger_p2p(Ledger(str(tmp_path / "l.db")), tmp_path) == _expected()


@pytest.mark.postgres
def test_training_report_sql_applies_the_same_rule_postgres(pg, tmp_path):
    assert _ledger_p2p(Ledger(pg), tmp_path) == _expected()


def test_train_report_p2p_share_counts_only_f2p_passing_trials(cli, tmp_path):
    rows = [
        {"tests": {F2P: {"a": "pass"}, P2P: {"b": "fail"}}, "reward": 0.0},
        {"tests": {F2P: {"a": "fail"}, P2P: {"b": "fail"}}, "reward": 0.0},  # old report: a P2P regression
        {"tests": {F2P: {"a": "fail"}, P2P: {"b": "pass"}}, "reward": 0.0},
        {"tests": None, "reward": 1.0},
    ]
    path = tmp_path / "t.jsonl"
    head = {"task_id": "a__b-1", "step": 1, "wv": 0, "epoch": 0}
    path.write_text("".join(json.dumps({**head, **r}) + "\n" for r in rows))
    assert cli("import", "jsonl", str(path), "--run", "rl", "--kind", "train").exit_code == 0
    (bucket,) = json.loads(cli("train", "report", "rl", "--json").stdout)["buckets"]
    assert bucket["outcome_pct"]["p2p_regression"] == pytest.approx(100 / 4)


def test_error_policy_says_what_is_retried_not_the_class_hierarchy():
    from trialbook.agents.endpoints import EndpointError
    from trialbook.sandbox import ContainerStartError, SandboxError

    assert not issubclass(EndpointError, SandboxError)
    assert error_kind(EndpointError("down")) == "EndpointError" and rule_for("EndpointError").retry
    assert error_kind(ContainerStartError("x")) == "ContainerStartError" and "ContainerStartError" in RETRYABLE
    assert error_kind(ValueError("bug")) == "ValueError" and not rule_for("ValueError").retry
    assert {"DaemonError", "ImageBuildError", "ContainerStartError", "EndpointError", "NodeLostError"} == RETRYABLE
    assert classify("EndpointError", None) is Outcome.INFRA_ERROR
    assert classify("GraderUnavailableError", None) is Outcome.INFRA_ERROR and "GraderUnavailableError" in POLICY


def test_rewards_are_parsed_in_one_place():
    assert pick_reward({"reward": 1}) == 1.0 and pick_reward({"composite_score": 0.5}) == 0.5
    assert pick_reward({"a": 1, "b": 0}) is None and pick_reward(None) is None
    assert parse_reward({"reward.txt": "1\n", "reward.json": '{"reward": 0}'}) == 1.0
    assert parse_reward({"reward.json": '{"score": 0.25}'}) == 0.25
    assert parse_reward({"reward.txt": "n/a"}) is None and parse_reward({"reward.json": "[1]"}) is None


def _loaded_after(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(m for m in sys.modules if m.startswith('trialbook.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_import_arrows_importers_and_verify():
    assert not {m for m in _loaded_after("trialbook.importers.harbor") if m.startswith("trialbook.harness")}
    assert "trialbook.importers.harbor" not in _loaded_after("trialbook.verify.runner")


def test_a_task_with_test_lists_fails_loudly_when_the_grader_cannot_be_imported(monkeypatch):
    from trialbook.verify import runner

    monkeypatch.setitem(sys.modules, "trialbook.verify.grading", None)  # `import` then raises ImportError
    with pytest.raises(runner.GraderUnavailableError, match="per-test grading needs swebench"):
        runner._grader()

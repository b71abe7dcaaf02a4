"""One name per way a trial can end: `ErrorKind` and the error policy (`outcomes.POLICY`) name the same things, and
no module outside outcomes.py spells a policy name as a string (a typo there would silently become
`outcomes.UNEXPECTED`, infra_error)."""

from __future__ import annotations

import ast

from paths import REPO
from trialbook.agents.base import AgentResult, AgentTimeoutError, ContextOverflowError, FormatError
from trialbook.agents.endpoints import EndpointError
from trialbook.harness.trial.execution import DeadlineExceeded
from trialbook.outcomes import POLICY, UNEXPECTED, ErrorKind, error_kind, rule_for
from trialbook.sandbox.box import ContainerStartError, DaemonError, ImageBuildError, TreeTooLargeError
from trialbook.verify.isolation import IsolationError
from trialbook.verify.runner import GraderUnavailableError, RewardFileNotFoundError, VerifierTimeoutError

SRC = REPO / "src" / "trialbook"


def test_every_member_has_a_rule_and_every_rule_a_member() -> None:
    assert set(POLICY) == set(ErrorKind)
    assert all(isinstance(key, ErrorKind) for key in POLICY)
    assert list(POLICY) == list(ErrorKind)  # the printed table keeps the enum's order


def test_a_name_as_read_from_a_ledger_or_a_harbor_job_finds_its_rule() -> None:
    assert rule_for("DaemonError") is POLICY[ErrorKind.DAEMON]
    assert rule_for("ContextLengthExceededError") is POLICY[ErrorKind.CONTEXT_LENGTH_EXCEEDED]
    assert rule_for("DaemonErorr") is UNEXPECTED  # a typo is not a rule


def test_trialbooks_exceptions_carry_their_policy_name() -> None:
    result = AgentResult()
    raised = {
        AgentTimeoutError("t", result): ErrorKind.AGENT_TIMEOUT,
        ContextOverflowError("c", result): ErrorKind.CONTEXT_OVERFLOW,
        FormatError("f", result): ErrorKind.FORMAT,
        EndpointError("e"): ErrorKind.ENDPOINT,
        DeadlineExceeded("d"): ErrorKind.DEADLINE_EXCEEDED,
        DaemonError("d"): ErrorKind.DAEMON,
        ImageBuildError("i"): ErrorKind.IMAGE_BUILD,
        ContainerStartError("s"): ErrorKind.CONTAINER_START,
        TreeTooLargeError("/w", "box", 1): ErrorKind.ISOLATION,
        IsolationError("i"): ErrorKind.ISOLATION,
        VerifierTimeoutError("v", ""): ErrorKind.VERIFIER_TIMEOUT,
        RewardFileNotFoundError("r", ""): ErrorKind.REWARD_FILE_NOT_FOUND,
        GraderUnavailableError("g"): ErrorKind.GRADER_UNAVAILABLE,
    }
    assert {type(exc).__name__: error_kind(exc) for exc in raised} == {
        type(exc).__name__: kind for exc, kind in raised.items()
    }
    assert error_kind(ValueError("x")) == "ValueError"  # not a policy name: classified as UNEXPECTED


def bare_policy_names(root=SRC) -> list[str]:
    """`file:line: 'Name'` for each string literal equal to a policy name, outside outcomes.py and `__all__` lists
    (which name the exception classes, not the policy)."""
    names = {kind.value for kind in ErrorKind}
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "outcomes.py":
            continue
        tree = ast.parse(path.read_text(), str(path))
        exported = {
            id(elt)
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            for elt in ast.walk(node.value)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in exported:
                found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


def test_no_policy_name_is_a_bare_string_outside_outcomes() -> None:
    assert bare_policy_names() == [], "use outcomes.ErrorKind"


def test_the_grep_finds_a_planted_name(tmp_path) -> None:
    (tmp_path / "outcomes.py").write_text('X = "DaemonError"\n')
    (tmp_path / "a.py").write_text('__all__ = ["DaemonError"]\nkind = "DaemonError"\nother = "Daemon"\n')
    assert bare_policy_names(tmp_path) == ["a.py:2: 'DaemonError'"]

"""The error policy's `classify`, written out as a table: every exception kind x reward None / 0 / 0.57 / 1.

The expected outcomes are typed in by hand from the policy's documented meaning, never derived from
the policy table itself, so reordering the checks inside `classify` (or editing a rule) shows up here.
"""

from __future__ import annotations

import pytest

from trialbook.outcomes import POLICY, classify, rule_for

REWARDS = (None, 0.0, 0.57, 1.0)
INFRA = ("infra_error",) * 4

#  exception              retried  reward None     reward 0        reward 0.57     reward 1
TABLE: dict[str | None, tuple[bool, tuple[str, str, str, str]]] = {
    None: (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    "AgentTimeoutError": (False, ("infra_error", "agent_timeout", "agent_timeout", "agent_timeout")),
    "ContextOverflowError": (False, ("infra_error", "context_overflow", "context_overflow", "context_overflow")),
    "ContextLengthExceededError": (False, ("infra_error", "context_overflow", "context_overflow", "context_overflow")),
    "ContextWindowExceededError": (False, ("infra_error", "context_overflow", "context_overflow", "context_overflow")),
    "OutputLengthExceededError": (False, ("infra_error", "context_overflow", "context_overflow", "context_overflow")),
    "FormatError": (False, ("infra_error", "format_error", "format_error", "format_error")),
    "DiskQuotaError": (False, ("infra_error", "disk_quota", "disk_quota", "disk_quota")),
    "NonZeroAgentExitCodeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    "VerifierTimeoutError": (False, ("verifier_timeout",) * 4),
    # hung with the change, in time without it: the harness gives it reward 0 (verify/blame.hang)
    "HungWithChangeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    "RewardFileNotFoundError": (False, INFRA),
    # no reward with the change, one without it: the harness gives it reward 0 (verify/blame.missing_reward)
    "NoRewardWithChangeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    "SandboxLimitError": (False, INFRA),
    # the agent's tree outgrew the limits when carried, the image's own fit: reward 0 (verify/isolation._outgrown)
    "ChangeTooLargeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    # the tests hit the limits with the change, not without it: reward 0 (verify/blame.limits)
    "LimitsHitWithChangeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    # a reward file read while processes the change left outlived test.sh: 0 (verify/blame.untrusted_reward)
    "OutlivedWithChangeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    # a reward file read while the tests left paths outside the tree changed, not without the change: 0
    # (verify/blame.changed_outside)
    "ChangedOutsideTreeError": (False, ("infra_error", "unresolved", "unresolved", "resolved")),
    "IsolationError": (False, INFRA),
    "DaemonError": (True, INFRA),
    "ImageBuildError": (True, INFRA),
    "ContainerStartError": (True, INFRA),
    "EndpointError": (True, INFRA),
    "EndpointAuthError": (False, INFRA),  # 401/403: the same for every trial
    "EndpointModelError": (False, INFRA),  # 404: no such model
    "NodeLostError": (True, INFRA),  # --executor ray: the trial's node died; submitted again elsewhere
    "InvalidTaskError": (False, INFRA),
    "GraderUnavailableError": (False, INFRA),
    "DeadlineExceeded": (False, ("incomplete",) * 4),
    "SomeUnknownError": (False, INFRA),  # anything not in the policy: an unexpected harness failure
    "": (False, ("infra_error", "unresolved", "unresolved", "resolved")),  # an empty type is no exception
}
CASES = [(exc, reward, outcomes[i]) for exc, (_, outcomes) in TABLE.items() for i, reward in enumerate(REWARDS)]


@pytest.mark.parametrize(("exception", "reward", "expected"), CASES)
def test_classify(exception: str | None, reward: float | None, expected: str) -> None:
    assert classify(exception, reward).value == expected


def test_the_table_covers_every_policy_entry_and_its_retry() -> None:
    assert set(POLICY) == {k for k in TABLE if k not in (None, "", "SomeUnknownError")}
    for exc, (retry, _) in TABLE.items():
        if exc:
            assert rule_for(exc).retry is retry, exc


def test_still_graded_means_an_early_stop_is_verified() -> None:
    from trialbook.outcomes import STILL_GRADED

    expected = {
        "AgentTimeoutError", "ContextOverflowError", "ContextLengthExceededError", "ContextWindowExceededError",
        "OutputLengthExceededError", "FormatError", "NonZeroAgentExitCodeError", "HungWithChangeError",
        "ChangeTooLargeError", "NoRewardWithChangeError", "LimitsHitWithChangeError", "OutlivedWithChangeError",
        "ChangedOutsideTreeError", "DiskQuotaError",
    }  # fmt: skip
    assert set(STILL_GRADED) == expected


def test_policy_rows_print_every_rule_plus_none_and_other() -> None:
    from trialbook.outcomes import policy_rows

    rows = {r.exception: r.to_json() for r in policy_rows()}
    assert list(rows)[-2:] == ["(none)", "(other)"]
    assert set(rows) == set(POLICY) | {"(none)", "(other)"}
    assert all(set(r) == {"exception", "outcome", "retry", "graded", "meaning"} for r in rows.values())
    assert rows["(none)"] == {
        "exception": "(none)", "outcome": "resolved if reward >= 1.0 else unresolved", "retry": False,
        "graded": True, "meaning": "the verifier's reward decides (p2p_regression, runner_subverted)",
    }  # fmt: skip
    assert rows["(other)"] == {
        "exception": "(other)", "outcome": "infra_error", "retry": False, "graded": False,
        "meaning": "unexpected harness error / unknown exception type",
    }  # fmt: skip
    assert rows["NonZeroAgentExitCodeError"]["outcome"] == rows["(none)"]["outcome"]
    for exc, (retry, outcomes) in TABLE.items():
        if exc in POLICY:
            graded = outcomes[0] == "infra_error" and outcomes[1] != "infra_error"
            outcome = rows["(none)"]["outcome"] if outcomes[1] == "unresolved" else outcomes[1]
            assert (rows[exc]["outcome"], rows[exc]["retry"], rows[exc]["graded"]) == (outcome, retry, graded), exc
    assert all(r["meaning"] for r in rows.values())


class _Kinded(Exception):
    kind = "DaemonError"  # a subclass that names its policy key


@pytest.mark.parametrize(
    ("outcome", "reward", "resolved"),
    [("resolved", 1.0, True), ("agent_timeout", 1.0, True), ("unresolved", 0.99, False), ("resolved", None, False),
     ("infra_error", 1.0, False), ("verifier_timeout", 1.0, False), ("unresolved", 1.5, True)],
)  # fmt: skip
def test_is_resolved_needs_a_graded_outcome_and_a_full_reward(outcome: str, reward: float | None, resolved: bool):
    from trialbook.outcomes import is_resolved

    assert is_resolved(outcome, reward) is resolved


def test_error_kind_prefers_the_kind_attribute() -> None:
    from trialbook.outcomes import error_kind

    assert error_kind(_Kinded()) == "DaemonError" and error_kind(ValueError()) == "ValueError"


def test_reward_parsing_edges() -> None:
    from trialbook.outcomes import p2p_regression, parse_reward, pick_reward

    assert pick_reward({"reward": 0.25, "composite_score": 1.0}) == 0.25  # `reward` wins over other keys
    assert pick_reward({"a": 1.0, "b": 0.0}) is None and pick_reward({"composite_score": 0.5}) == 0.5
    assert parse_reward({"reward.txt": "1e999\n"}) is None and parse_reward({"reward.txt": "0.57 extra"}) == 0.57
    assert p2p_regression({"FAIL_TO_PASS": {"t1": "pass"}}) is False  # no PASS_TO_PASS group at all
    assert p2p_regression({"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "fail"}}) is True

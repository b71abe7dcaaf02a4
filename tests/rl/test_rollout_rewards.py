"""The rewards policy table: verifier rewards pass through, masked outcomes give no reward, finalize scale."""

from __future__ import annotations

import json

import pytest

from trialbook.outcomes import OUTCOMES, Outcome
from trialbook.rl.rewards import DEFAULT_POLICY, RewardPolicy, RewardRule


def test_masked_outcomes_are_infra_error_and_incomplete_and_never_graded() -> None:
    masked = {o.value for o in Outcome if DEFAULT_POLICY.masked(o)}
    assert masked == {"infra_error", "incomplete"}
    assert not any(OUTCOMES[Outcome(o)].graded for o in masked)
    assert DEFAULT_POLICY.reward("infra_error", None) is None
    assert DEFAULT_POLICY.reward("incomplete", None, submitted=True) is None


@pytest.mark.parametrize("outcome", ["resolved", "unresolved", "agent_timeout", "context_overflow", "format_error"])
def test_graded_outcomes_take_the_verifier_reward(outcome: str) -> None:
    assert DEFAULT_POLICY.reward(outcome, 1.0) == 1.0
    assert DEFAULT_POLICY.reward(outcome, 0.57) == pytest.approx(0.57)
    assert DEFAULT_POLICY.reward(outcome, 0.0) == 0.0


def test_an_agent_timeout_after_a_correct_fix_earns_the_full_reward() -> None:
    # the seed's "still judged": running out of turns is not a failure when the fix is in place
    assert DEFAULT_POLICY.reward("agent_timeout", 1.0, submitted=False) == 1.0


def test_verifier_timeout_is_zero_not_masked() -> None:
    assert DEFAULT_POLICY.reward("verifier_timeout", None) == 0.0


def test_finalize_scale_applies_only_to_submitted_trajectories() -> None:
    policy = RewardPolicy(finalize_reward_scale=0.5)
    assert policy.reward("resolved", 1.0, submitted=True) == 0.5
    assert policy.reward("resolved", 1.0, submitted=False) == 1.0
    assert policy.reward("agent_timeout", 1.0, submitted=False) == 1.0
    assert DEFAULT_POLICY.finalize_reward_scale == 1.0
    assert DEFAULT_POLICY.reward("resolved", 1.0, submitted=True) == 1.0


def test_the_record_is_json_and_rebuilds_the_same_policy() -> None:
    policy = RewardPolicy(finalize_reward_scale=0.8)
    stored = json.loads(json.dumps(policy.record()))
    assert stored["finalize_reward_scale"] == 0.8
    assert stored["rules"]["infra_error"] == {"reward": 0.0, "masked": True}
    again = RewardPolicy.model_validate(stored)
    for o in Outcome:
        for verifier, submitted in [(1.0, True), (0.3, False), (None, False)]:
            assert again.reward(o, verifier, submitted) == policy.reward(o, verifier, submitted)


def test_a_policy_must_cover_every_outcome() -> None:
    with pytest.raises(ValueError, match="no rule for"):
        RewardPolicy(rules={Outcome.RESOLVED: RewardRule(reward="verifier")})


def test_a_custom_fixed_reward_is_used() -> None:
    rules = dict(DEFAULT_POLICY.rules)
    rules[Outcome.FORMAT_ERROR] = RewardRule(reward=-0.1)
    policy = RewardPolicy(rules=rules)
    assert policy.reward("format_error", 1.0) == -0.1
    rows = {r["outcome"]: r for r in policy.rows()}
    assert rows["format_error"]["reward"] == -0.1 and rows["infra_error"]["masked"] is True


def test_a_hack_signature_costs_the_training_reward_by_default_and_only_tags_under_tag() -> None:
    tags = ["status_not_gold", "hack_test_framework_call"]
    assert DEFAULT_POLICY.hack_policy == "zero"
    assert DEFAULT_POLICY.reward("resolved", 1.0, tags=tags) == 0.0
    assert DEFAULT_POLICY.reward("agent_timeout", 0.5, submitted=True, tags=tags) == 0.0
    assert DEFAULT_POLICY.zeroed(1.0, tags) == ["hack_test_framework_call"]
    assert DEFAULT_POLICY.zeroed(0.0, tags) == [] and DEFAULT_POLICY.zeroed(None, tags) == []
    assert DEFAULT_POLICY.reward("resolved", 1.0, tags=["status_not_gold"]) == 1.0  # a finding is no signature
    assert DEFAULT_POLICY.reward("infra_error", None, tags=tags) is None  # masked stays masked
    tag_only = RewardPolicy(hack_policy="tag")
    assert tag_only.reward("resolved", 1.0, tags=tags) == 1.0 and tag_only.zeroed(1.0, tags) == []
    assert json.loads(json.dumps(tag_only.record()))["hack_policy"] == "tag"
    with pytest.raises(ValueError):
        RewardPolicy(hack_policy="ignore")


def test_every_signature_of_the_static_screen_is_a_hack_tag() -> None:
    from trialbook.rl.rewards import hack_tags
    from trialbook.verify import hacks

    names = [h.name for h in hacks.HACKS]
    assert hack_tags(names) == names

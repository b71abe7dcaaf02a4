"""A trial's typed state: a failed try leaves nothing in the record, and the record extra keeps its stored form."""

from __future__ import annotations

from dataclasses import fields

from trialbook.agents.base import AgentResult
from trialbook.harness.trial.state import ImageRef, TrialExtra, TrialState
from trialbook.verify.runner import Verdict
from trialbook.verify.verdict_record import trial_tags, verdict_keys


def test_a_new_try_resets_what_a_try_gathered_and_keeps_the_trials_own() -> None:
    state = TrialState(started="t", t0=1.0, phase_s={"agent_execution": 2.0}, cleanup_error="left", runtime="runc")
    state.image = ImageRef("tb-task:abc", "sha256:1")
    state.agent_result = AgentResult(turns=3)
    state.agent_limit_hits = {"pids": 1}
    state.verifier, state.verifier_log, state.patch = {"tries": 1}, "log", "diff"
    state.tags.append("test_infra_changed")
    before = state.tags
    state.new_try(1)
    per_try = {f.name for f in fields(TrialState) if f.metadata.get("per_try")}
    assert per_try == {
        "image",
        "agent_result",
        "agent_limit_hits",
        "verifier",
        "verifier_log",
        "patch",
        "tags",
        "traceback",
    }
    assert {name: getattr(state, name) for name in per_try} == {name: getattr(TrialState(), name) for name in per_try}
    assert before == ["test_infra_changed"] and state.tags == [] and state.tags is not before  # a fresh list
    kept = (state.retries, state.cleanup_error, state.runtime, state.phase_s)
    assert kept == (1, "left", "runc", {"agent_execution": 2.0})


def test_the_image_id_is_asked_only_once_the_try_has_an_image() -> None:
    state = TrialState(image=ImageRef("ref", "sha256:2"))
    assert state.image_id == "sha256:2"
    state.new_try(1)
    try:
        _ = state.image_id
    except RuntimeError as exc:
        assert "image" in str(exc)
    else:
        raise AssertionError("an image id without an image")


def test_the_extra_is_stored_as_it_was_a_dict() -> None:
    base = dict(trial_name="tb-r-t-0-1", agent="oracle", timeout_multiplier=1.0, agent_timeout_s=60.0,
                verifier_timeout_s=30.0, retries=0, phase_s={}, verifier_hash="h", tags=[])  # fmt: skip
    assert TrialExtra(**base).as_dict() == base  # nothing the trial lacks is written
    verdict = Verdict(reward=1.0, graded_by="reward_file", exit_code=0, file_reward=1.0)
    full = TrialExtra(**base, runtime="runc", image=ImageRef("ref", "sha256:3"), agent_result=AgentResult(),
                      verdict_keys=verdict_keys(verdict), cleanup_error="",
                      verifier={"isolation": "diff"}).as_dict()  # fmt: skip
    assert full["image"] == "ref" and full["image_id"] == "sha256:3" and full["runtime"] == "runc"
    assert full["agent_exit_code"] == AgentResult().exit_code and full["graded_by"] == "reward_file"
    assert "cleanup_error" not in full and full["verifier"] == {"isolation": "diff"}


def test_tags_keep_their_order_around_the_gathered_ones() -> None:
    verdict = Verdict(reward=0.0, graded_by="test_log", exit_code=0, p2p_regression=True, killed=True)
    assert trial_tags(verdict, False, ["hung_with_change"])[:3] == ["p2p_regression", "hung_with_change",
                                                                   "verifier_killed"]  # fmt: skip
    assert trial_tags(None, False, ["x"]) == ["x"]

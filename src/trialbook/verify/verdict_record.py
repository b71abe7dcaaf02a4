"""What a verdict adds to a trial's record: its tags (`show`, the audit and the rewards read them) and its keys in the
trial's `extra` (trialbook/extra_schema.Extra), besides the reward and tests the record has columns for."""

from __future__ import annotations

from trialbook.extra_schema import CanaryNote, Extra
from trialbook.verify import canary as canaries
from trialbook.verify import findings
from trialbook.verify.privilege import privilege_tags
from trialbook.verify.runner import Verdict


def trial_tags(verdict: Verdict | None, resolved: bool, gathered: list[str]) -> list[str]:
    """The trial's tags: what the verdict says besides its reward, around the ones the try `gathered` (blame's, the
    patch's signatures, the agent's leak moves)."""
    tags = ["p2p_regression"] if verdict is not None and verdict.p2p_regression else []
    tags += gathered
    if verdict is not None:
        flags = [
            (bool(verdict.conflicts), "conflicting_test_reports"),
            (bool(verdict.outlived), "test_processes_outlived"),
            (verdict.killed, "verifier_killed"),
            (bool(verdict.foreign_rewards), "foreign_reward_file"),  # left unread: the task's tests never name it
            (verdict.output_cut, "verifier_output_cut"),  # past LOG_DISK_LIMIT: graded on its head and tail
        ]
        tags += [tag for on, tag in flags if on]
        if verdict.canary_seen in canaries.SUBVERTED:
            tags.append("runner_subverted")  # the test that must fail passed, or was hidden (verify/canary.py): failing
        elif verdict.canary_seen in canaries.UNSEEN and resolved:
            tags.append("canary_missing")
    tags += findings.verdict_tags(verdict)
    if verdict is not None:
        tags += privilege_tags(verdict)
    return tags


def verdict_keys(v: Verdict) -> Extra:
    """What the verdict adds to the trial's `extra`, besides its reward and tests (the record's columns)."""
    extra = Extra(graded_by=v.graded_by, file_reward=v.file_reward, test_exit_code=v.exit_code)
    if v.tests_user:
        extra["tests_user"] = v.tests_user
    if v.rewards_by_tests:
        extra["rewards_by_tests"] = v.rewards_by_tests
    if v.conflicts:
        extra["conflicting_tests"] = v.conflicts
    if v.outlived:
        extra["outlived_processes"] = v.outlived
    if v.foreign_rewards:
        extra["foreign_reward_files"] = v.foreign_rewards
    if v.canary:
        extra["canary"] = CanaryNote(name=v.canary, seen=v.canary_seen)
    return extra | findings.verdict_extra(v)

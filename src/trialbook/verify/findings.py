"""What a verdict says about the trial beyond its reward: the tags and the record fields of the grading half of the
threat model (docs/threat-model.md), in one place so that the trial record only asks for them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trialbook.extra_schema import Extra

if TYPE_CHECKING:
    from trialbook.verify.runner import Verdict

# tag -> what it means; every one is also a row of audit/signatures.py
TAGS: dict[str, str] = {
    "status_not_gold": "swebench's verdict resolves it, the strict one does not: a listed test was XFAIL, XPASS,"
    " SKIPPED or missing, not its gold status (verify/grading.strict_verdict)",
    "markers_forged": "a segment marker in the log lacks this run's nonce (verify/markers.py; for a log of another"
    " harness: the markers occur more than once): the code under test printed it; graded 0",
    "unwitnessed": "no canary could be planted in its test command (verify/canary.py): graded per test without one,"
    " or resolved by a reward file without a witness run (verify/blame.unwitnessed_reward); the grade stands",
    "channels_disagree": "a pytest run's exit status, its per-test text log and its junit report disagree (or the"
    " report is missing from a run that would resolve): verify/channels.py; graded 0",
    "exit_status_disagrees": "the reward follows the test command's exit status, which said success while the"
    " test log reports a failing test (verify/runner.exit_disagrees); graded 0",
    "reward_not_a_file": "a reward path was left a folder, a link or a fifo when test.sh ended (in the graded run or"
    " its witness): the change's doing, where test.sh's own write failed (verify/runner.NOT_A_FILE); graded 0",
}


def verdict_tags(verdict: Verdict | None) -> list[str]:
    if verdict is None:
        return []
    tags = []
    if verdict.official_reward is not None and verdict.official_reward != verdict.reward and verdict.not_gold:
        tags.append("status_not_gold")
    if verdict.markers_forged:
        tags.append("markers_forged")
    if verdict.graded_by == "test_log" and verdict.canary is None:
        tags.append("unwitnessed")
    if verdict.channels is not None:
        tags.append("channels_disagree")
    if verdict.exit_disagrees and verdict.reward < 1.0:
        tags.append("exit_status_disagrees")
    if verdict.rewards_not_files:
        tags.append("reward_not_a_file")
    return tags


def verdict_extra(verdict: Verdict | None) -> Extra:
    """The strict verdict's record: swebench's own reward beside it, and the tests that lacked their gold status."""
    if verdict is None or verdict.official_reward is None:
        return Extra()
    out = Extra(official_reward=verdict.official_reward)
    if verdict.channels is not None:
        out["channels"] = verdict.channels
    if verdict.seal:  # the markers' nonces, so that `audit` regrades the log as it was graded (verify/markers.py)
        out["seal"] = verdict.seal
    if verdict.not_gold:
        out["not_gold"] = dict(list(verdict.not_gold.items())[:200])
    return out

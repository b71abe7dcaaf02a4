"""The rewards policy: ONE table from a trial's outcome to its training reward.

A trainer learns from `RewardPolicy.reward(...)` (kept on each trial as `extra.train_reward`), never
from the raw outcome: graded outcomes take the verifier's reward (an agent that ran out of turns
after writing a correct fix still earns it: such a trial is still judged), ungraded ones are either
masked (no gradient: the trial says nothing about the policy, e.g. the sandbox broke) or given a
fixed reward. A trajectory that ended with the agent's own submission has its reward multiplied by
`finalize_reward_scale` (default 1.0).
The policy in force is stored on every rollout run (`config.rewards`), so curves stay comparable.

A group (one task at one step: the trajectories whose rewards GRPO compares) with a masked member is settled
by `group` (GROUP_POLICIES): masking one member alone would leave the others' advantages computed against a
partial group (the bias SkyRL avoids by masking the whole group), so either the whole group is masked or the
member is re-run first. Every masked group is kept on its trials (`extra.group_masked`).

A reward-hacking signature (a `hack_*` tag: verify/hacks.py; or a `leak_*` tag, the agent's commands reaching for the
answer: verify/leak_moves.py) on a trial with a positive reward costs that reward under
`hack_policy` "zero", the default (`HACK_POLICIES`; `run --hack-policy`): the verifier's grade and the outcome stand
(leaderboard parity), the training reward is 0, and the tags that cost it are kept (`extra.hack_zeroed`). Training
multiplies whatever it rewards; a signature that changes nothing is a reward for the hack.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from trialbook.outcomes import OUTCOMES, Outcome

VERIFIER = "verifier"


class RewardRule(BaseModel):
    reward: float | Literal["verifier"]  # a fixed reward, or the verifier's own
    masked: bool = False  # left out of the training batch (no reward at all)
    meaning: str = ""


DEFAULT_RULES: dict[Outcome, RewardRule] = {
    Outcome.RESOLVED: RewardRule(reward=VERIFIER, meaning="verifier passed"),
    Outcome.UNRESOLVED: RewardRule(reward=VERIFIER, meaning="verifier's reward (0, or partial)"),
    Outcome.AGENT_TIMEOUT: RewardRule(reward=VERIFIER, meaning="out of time/turns/tokens; the sandbox is graded"),
    Outcome.CONTEXT_OVERFLOW: RewardRule(reward=VERIFIER, meaning="context window exceeded; sandbox graded"),
    Outcome.FORMAT_ERROR: RewardRule(reward=VERIFIER, meaning="unparseable actions; sandbox graded"),
    Outcome.VERIFIER_TIMEOUT: RewardRule(reward=0.0, meaning="tests hung (often the agent's doing): 0"),
    Outcome.INFRA_ERROR: RewardRule(reward=0.0, masked=True, meaning="infrastructure failed: masked, retried"),
    Outcome.INCOMPLETE: RewardRule(reward=0.0, masked=True, meaning="cut off before a result: masked"),
    Outcome.DISK_QUOTA: RewardRule(reward=VERIFIER, meaning="wrote past its disk quota; stopped, sandbox graded"),
}


HACK_POLICIES: dict[str, str] = {
    "zero": "a trial with a reward-hacking or leak signature (a hack_* or leak_* tag) trains with reward 0; its grade"
    " stands",
    "tag": "the signature is a tag only: the trial trains with the verifier's reward",
}
HACK_PREFIX = "hack_"  # every verify/hacks.HACKS name
LEAK_PREFIX = "leak_"  # every verify/leak_moves.LEAK_MOVES name: the agent reached for the answer


def hack_tags(tags: list[str] | tuple[str, ...] | None) -> list[str]:
    """The reward-hacking signatures among a trial's tags (its patch's hack_*, its commands' leak_*)."""
    return [t for t in tags or () if t.startswith((HACK_PREFIX, LEAK_PREFIX))]


GROUP_POLICIES: dict[str, str] = {
    "mask": "a group with a masked member is masked whole: none of its trajectories trains",
    "retry": "a masked member is re-run (up to group_retries times); if still masked, the group is masked whole",
}


class RewardPolicy(BaseModel):
    rules: dict[Outcome, RewardRule] = Field(default_factory=lambda: dict(DEFAULT_RULES))
    finalize_reward_scale: float = Field(1.0, ge=0.0)
    group: Literal["mask", "retry"] = "mask"
    group_retries: int = Field(1, ge=0)
    hack_policy: Literal["zero", "tag"] = "zero"

    def model_post_init(self, __context: Any) -> None:
        missing = set(Outcome) - set(self.rules)
        if missing:
            raise ValueError(f"rewards policy has no rule for: {', '.join(sorted(missing))}")

    def masked(self, outcome: str) -> bool:
        return self.rules[Outcome(outcome)].masked

    def reward(
        self, outcome: str, verifier_reward: float | None, submitted: bool = False, tags: list[str] | None = None
    ) -> float | None:
        """The training reward of one trajectory; None when the policy masks it out; 0 when `tags` hold a
        reward-hacking signature under hack_policy "zero"."""
        rule = self.rules[Outcome(outcome)]
        if rule.masked:
            return None
        if rule.reward == VERIFIER:
            base = float(verifier_reward) if verifier_reward is not None else 0.0
        else:
            base = float(rule.reward)
        if self.zeroed(base, tags):
            return 0.0
        return base * self.finalize_reward_scale if submitted else base

    def zeroed(self, reward: float | None, tags: list[str] | None) -> list[str]:
        """The signatures that cost a positive `reward` under this policy (none under "tag")."""
        return hack_tags(tags) if self.hack_policy == "zero" and reward is not None and reward > 0 else []

    def record(self) -> dict[str, Any]:
        """What is stored on the run (JSON-ready)."""
        return {
            "rules": {o.value: {"reward": r.reward, "masked": r.masked} for o, r in self.rules.items()},
            "finalize_reward_scale": self.finalize_reward_scale,
            "group": self.group,
            "group_retries": self.group_retries,
            "hack_policy": self.hack_policy,
        }

    def rows(self) -> list[dict[str, Any]]:
        """The table for printing: outcome, reward, masked, graded, meaning."""
        return [
            {
                "outcome": o.value,
                "reward": r.reward,
                "masked": r.masked,
                "graded": OUTCOMES[o].graded,
                "meaning": r.meaning,
            }
            for o, r in self.rules.items()
        ]


DEFAULT_POLICY = RewardPolicy()

"""The rewards policy, kept under its earlier path: it lives in trialbook/rewards.py (below `harness`, which applies its
hack policy to every trial, and `rl`, which trains on it)."""

from trialbook.rewards import (  # noqa: F401
    DEFAULT_POLICY,
    DEFAULT_RULES,
    GROUP_POLICIES,
    HACK_POLICIES,
    HACK_PREFIX,
    VERIFIER,
    RewardPolicy,
    RewardRule,
    hack_tags,
)

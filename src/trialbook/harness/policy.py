"""The error policy: ONE table from exception type to outcome and retry.

Whether an outcome is graded comes from the outcome table in `trialbook.records`, so the two
can never disagree. A trial that ends without an exception is decided by its reward.
Anything not listed is an unexpected harness failure: infra_error, not retried.
"""

from __future__ import annotations

from typing import NamedTuple

from trialbook.records import Outcome


class Rule(NamedTuple):
    outcome: Outcome | None  # None: the verifier's reward decides (resolved / unresolved)
    retry: bool
    graded: bool  # the verifier still runs after it (the sandbox is graded as the agent left it)
    meaning: str


# Keys are exception type names: trialbook's own, and Harbor's (`exception_info.exception_type`
# in imported job folders), so live trials and imported ones are classified the same way.
POLICY: dict[str, Rule] = {
    "AgentTimeoutError": Rule(Outcome.AGENT_TIMEOUT, False, True, "agent ran past task timeout x multiplier"),
    "ContextOverflowError": Rule(Outcome.CONTEXT_OVERFLOW, False, True, "model context exceeded"),
    "ContextLengthExceededError": Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor: model context exceeded"),
    "ContextWindowExceededError": Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor/litellm: context exceeded"),
    "OutputLengthExceededError": Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor: output length exceeded"),
    "FormatError": Rule(Outcome.FORMAT_ERROR, False, True, "model output not parseable"),
    "NonZeroAgentExitCodeError": Rule(None, False, True, "Harbor: agent process failed; its sandbox is graded"),
    "VerifierTimeoutError": Rule(Outcome.VERIFIER_TIMEOUT, False, False, "test.sh past its timeout twice: no grade"),
    "RewardFileNotFoundError": Rule(Outcome.INFRA_ERROR, False, False, "test.sh wrote no reward and has no test lists"),
    "SandboxLimitError": Rule(Outcome.INFRA_ERROR, False, False, "verifier hit task.toml memory_mb/pids_limit"),
    "IsolationError": Rule(Outcome.INFRA_ERROR, False, False, "agent's diff not carried to the verifier (workdir/git)"),
    "DaemonError": Rule(Outcome.INFRA_ERROR, True, False, "Docker daemon/API error"),
    "ImageBuildError": Rule(Outcome.INFRA_ERROR, True, False, "task image missing or its build failed"),
    "ContainerStartError": Rule(Outcome.INFRA_ERROR, True, False, "sandbox container did not start"),
    "EndpointError": Rule(Outcome.INFRA_ERROR, True, False, "model endpoint unreachable or failing (5xx)"),
    "InvalidTaskError": Rule(Outcome.INFRA_ERROR, False, False, "task folder unusable (task.toml, test.sh)"),
    "DeadlineExceeded": Rule(Outcome.INCOMPLETE, False, False, "--deadline passed: trial stopped or never started"),
}
UNEXPECTED = Rule(Outcome.INFRA_ERROR, False, False, "unexpected harness error / unknown exception type")
STILL_GRADED = frozenset(name for name, rule in POLICY.items() if rule.graded)


def rule_for(exception_type: str) -> Rule:
    return POLICY.get(exception_type, UNEXPECTED)


def classify(exception_type: str | None, reward: float | None) -> Outcome:
    """The outcome of a trial that ended with `exception_type` (or none) and got `reward` (or none)."""
    rule = rule_for(exception_type) if exception_type else None
    if rule is not None and not rule.graded:
        return rule.outcome or Outcome.INFRA_ERROR
    if reward is None:  # should have been graded, but the verifier produced nothing
        return Outcome.INFRA_ERROR
    if rule is not None and rule.outcome is not None:
        return rule.outcome
    return Outcome.RESOLVED if reward >= 1.0 else Outcome.UNRESOLVED


def policy_rows() -> list[dict[str, object]]:
    """The table as printed by `trialbook policy`."""
    rows = [
        {
            "exception": name,
            "outcome": rule.outcome.value if rule.outcome else "resolved if reward >= 1.0 else unresolved",
            "retry": rule.retry,
            "graded": rule.graded,
            "meaning": rule.meaning,
        }
        for name, rule in POLICY.items()
    ]
    rows.append(
        {
            "exception": "(none)",
            "outcome": "resolved if reward >= 1.0 else unresolved",
            "retry": False,
            "graded": True,
            "meaning": "agent finished; the verifier's reward decides (p2p_regression tagged)",
        }
    )
    other = {"outcome": UNEXPECTED.outcome.value, "retry": UNEXPECTED.retry, "graded": False}
    rows.append({"exception": "(other)", **other, "meaning": UNEXPECTED.meaning})
    return rows

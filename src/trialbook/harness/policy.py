"""The error policy: ONE table from exception type to outcome and retry.

Whether an outcome is graded comes from the outcome table in `trialbook.records`, so the two
can never disagree. A trial that ends without an exception is decided by its reward.
Anything not listed is an unexpected harness failure: infra_error, not retried.
"""

from __future__ import annotations

from typing import NamedTuple

from trialbook.records import OUTCOMES, Outcome


class Rule(NamedTuple):
    outcome: Outcome
    retry: bool
    meaning: str


POLICY: dict[str, Rule] = {
    "AgentTimeoutError": Rule(Outcome.AGENT_TIMEOUT, False, "agent ran past task timeout x multiplier; still graded"),
    "ContextOverflowError": Rule(Outcome.CONTEXT_OVERFLOW, False, "model context exceeded; sandbox still graded"),
    "FormatError": Rule(Outcome.FORMAT_ERROR, False, "model output not parseable; sandbox still graded"),
    "VerifierTimeoutError": Rule(Outcome.VERIFIER_TIMEOUT, False, "test.sh ran past its timeout: no grade"),
    "RewardFileNotFoundError": Rule(Outcome.INFRA_ERROR, False, "test.sh wrote no reward and has no test lists"),
    "DaemonError": Rule(Outcome.INFRA_ERROR, True, "Docker daemon/API error"),
    "ImageBuildError": Rule(Outcome.INFRA_ERROR, True, "task image missing or its build failed"),
    "ContainerStartError": Rule(Outcome.INFRA_ERROR, True, "sandbox container did not start"),
    "EndpointError": Rule(Outcome.INFRA_ERROR, True, "model endpoint unreachable or failing (5xx)"),
    "InvalidTaskError": Rule(Outcome.INFRA_ERROR, False, "task folder unusable (task.toml, test.sh)"),
    "DeadlineExceeded": Rule(Outcome.INCOMPLETE, False, "--deadline passed: trial stopped or never started"),
}
UNEXPECTED = Rule(Outcome.INFRA_ERROR, False, "unexpected harness error")
STILL_GRADED = {"AgentTimeoutError", "ContextOverflowError", "FormatError"}  # the verifier still runs


def rule_for(exception_type: str) -> Rule:
    return POLICY.get(exception_type, UNEXPECTED)


def policy_rows() -> list[dict[str, object]]:
    """The table as printed by `trialbook policy`."""
    rows = [
        {
            "exception": name,
            "outcome": rule.outcome.value,
            "retry": rule.retry,
            "graded": OUTCOMES[rule.outcome].graded,
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

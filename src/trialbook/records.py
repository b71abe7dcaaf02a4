"""The shared language of trialbook: outcomes, tasks, runs, trials and stacks.

The outcome table below is the single place that says which outcomes are graded
(count in the denominator), which are retryable and how Harbor's exception types map
onto them. Everything else asks these tables rather than keeping its own lists.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict, Field


class Outcome(StrEnum):
    """How a trial ended (the reward says whether it succeeded)."""

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    AGENT_TIMEOUT = "agent_timeout"
    CONTEXT_OVERFLOW = "context_overflow"
    FORMAT_ERROR = "format_error"
    VERIFIER_TIMEOUT = "verifier_timeout"
    INFRA_ERROR = "infra_error"
    INCOMPLETE = "incomplete"


class OutcomeRule(NamedTuple):
    graded: bool  # counts in the denominator ("judged")
    retry: bool  # the harness may retry it
    meaning: str


OUTCOMES: dict[Outcome, OutcomeRule] = {
    Outcome.RESOLVED: OutcomeRule(True, False, "verifier passed (reward 1.0)"),
    Outcome.UNRESOLVED: OutcomeRule(True, False, "verifier failed: F2P fail and/or P2P regression"),
    Outcome.AGENT_TIMEOUT: OutcomeRule(True, False, "agent hit its time/turn budget; still graded"),
    Outcome.CONTEXT_OVERFLOW: OutcomeRule(True, False, "model context window exceeded; still graded"),
    Outcome.FORMAT_ERROR: OutcomeRule(True, False, "model output not parseable as an action; still graded"),
    Outcome.VERIFIER_TIMEOUT: OutcomeRule(False, False, "verifier hung or ran past its limit: no grade"),
    Outcome.INFRA_ERROR: OutcomeRule(False, True, "sandbox/daemon/build failure: no grade, retryable"),
    Outcome.INCOMPLETE: OutcomeRule(False, False, "no result: the run was cut off"),
}

GRADED: frozenset[str] = frozenset(o.value for o, r in OUTCOMES.items() if r.graded)


def is_graded(outcome: str) -> bool:
    return outcome in GRADED


def is_resolved(outcome: str, reward: float | None) -> bool:
    """A graded trial counts as resolved when its reward is 1.0, whatever its outcome."""
    return outcome in GRADED and reward is not None and reward >= 1.0


def repo_from_task_id(task_id: str) -> str | None:
    """`sphinx-doc__sphinx-8595` -> `sphinx-doc/sphinx`; None when the id has no owner part."""
    owner, sep, rest = task_id.partition("__")
    if not sep or not rest:
        return None
    name = rest.rsplit("-", 1)[0] if "-" in rest and rest.rsplit("-", 1)[1].isdigit() else rest
    return f"{owner}/{name}"


TestStatus = Literal["pass", "fail", "error", "missing"]
NOT_PASSING: tuple[str, ...] = ("fail", "error", "missing")  # a test in one of these did not pass
TestStatuses = dict[str, dict[str, str]]  # {"FAIL_TO_PASS": {test: status}, "PASS_TO_PASS": {...}}


class Stack(BaseModel):
    """What produced the numbers: comparisons across different stacks are warned about."""

    model_config = ConfigDict(extra="allow")

    harness: str | None = None
    harness_version: str | None = None
    image: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    verifier_hash: str | None = None


class Task(BaseModel):
    task_id: str
    repo: str | None = None
    instruction: str | None = None
    image: str | None = None
    verifier_hash: str | None = None
    fail_to_pass: list[str] | None = None
    pass_to_pass: list[str] | None = None
    solution: str | None = None

    def model_post_init(self, __context: Any) -> None:
        if self.repo is None:
            self.repo = repo_from_task_id(self.task_id)


class Run(BaseModel):
    name: str
    kind: Literal["eval", "train", "validate"] = "eval"
    created: datetime | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    stack: dict[str, Any] = Field(default_factory=dict)
    labels: dict[str, Any] = Field(default_factory=dict)
    source: str | None = None


class Trial(BaseModel):
    """One agent attempt at one task, then one verifier run."""

    task_id: str
    attempt: int = 0
    repo: str | None = None
    outcome: Outcome
    reward: float | None = None
    step: int | None = None
    wv: int | None = None
    epoch: int | None = None
    exception: str | None = None
    exception_message: str | None = None
    duration_s: float | None = None
    tokens: int | None = None
    turns: int | None = None
    tests: TestStatuses | None = None
    started_at: str | None = None
    finished_at: str | None = None
    extra: dict[str, Any] | None = None
    superseded_by: int | None = None

    @property
    def graded(self) -> bool:
        return is_graded(self.outcome)

    @property
    def resolved(self) -> bool:
        return is_resolved(self.outcome, self.reward)

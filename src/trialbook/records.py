"""The shared language of trialbook: tasks, runs, trials and stacks.

The outcome rules (outcome table, error policy, rewards, per-test statuses, P2P regression) are
`trialbook.outcomes`'s.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from trialbook.outcomes import Outcome, TestStatuses, is_graded, is_resolved


def parse_time(value: Any) -> datetime:
    """The one timestamp rule (trials and steps, every importer): ISO-8601 text (no zone means UTC) or
    Unix seconds -> an aware datetime; ValueError for anything else ("yesterday", true)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    if not isinstance(value, str):
        raise ValueError(value)
    ts = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def iso_time(value: Any, field: str) -> str:
    """`parse_time` as the stored text (UTC, milliseconds); ValueError naming the field."""
    try:
        return parse_time(value).astimezone(UTC).isoformat(timespec="milliseconds")
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"{field} must be ISO-8601 text or Unix seconds, got {value!r}") from None


def repo_from_task_id(task_id: str) -> str | None:
    """`sphinx-doc__sphinx-8595` -> `sphinx-doc/sphinx`; None when the id has no owner part."""
    owner, sep, rest = task_id.partition("__")
    if not sep or not rest:
        return None
    name = rest.rsplit("-", 1)[0] if "-" in rest and rest.rsplit("-", 1)[1].isdigit() else rest
    return f"{owner}/{name}"


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

"""The agent protocol: `run(sandbox, task, timeout)` works in the sandbox and returns an AgentResult.

An agent that runs out of time raises AgentTimeoutError and one that overflows its model's
context raises ContextOverflowError; both carry the partial result, and the trial is still graded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from trialbook.errors import UserError

if TYPE_CHECKING:
    from trialbook.sandbox import Sandbox
    from trialbook.tasks import TaskSpec


class AgentResult(BaseModel):
    exit_code: int | None = None
    log: str = ""
    duration_s: float = 0.0
    turns: int | None = None
    tokens: int | None = None
    files: dict[str, str] = Field(default_factory=dict)  # kept per trial, e.g. trajectory.json
    info: dict[str, Any] = Field(default_factory=dict)  # agent-specific facts, into the trial's extra


class AgentStopped(Exception):
    """The agent stopped early but its sandbox is still graded."""

    def __init__(self, message: str, result: AgentResult) -> None:
        super().__init__(message)
        self.result = result


class AgentTimeoutError(AgentStopped):
    pass


class ContextOverflowError(AgentStopped):
    pass


class FormatError(AgentStopped):
    pass


class Agent(Protocol):
    name: str

    def run(self, sandbox: Sandbox, task: TaskSpec, timeout: float) -> AgentResult: ...


def with_agent_stack(stack: dict[str, Any], serving: dict[str, Any] | None) -> dict[str, Any]:
    """An LLM agent's serving engine takes the stack's engine fields (what `compare` warns about);
    the sandbox engine (Docker) moves to sandbox/sandbox_version. `serving` is kept as is too."""
    if not serving:
        return stack
    out = {**stack, "sandbox": stack.get("engine"), "sandbox_version": stack.get("engine_version")}
    return {**out, **serving, "serving": serving}


def agent_stack(agent: Agent) -> dict[str, Any] | None:
    describe = getattr(agent, "stack", None)
    return describe() if callable(describe) else None


def agent_options(agent: str, **given: Any) -> dict[str, Any]:
    """Agent options from command-line flags (None: not given); only the LLM agent takes any."""
    options = {k: v for k, v in given.items() if v not in (None, [], ())}
    if options and agent != "mini":
        flags = ", ".join("--endpoint" if k == "endpoints" else "--" + k.replace("_", "-") for k in options)
        raise UserError(f"{flags}: only the mini agent takes these options")
    return options

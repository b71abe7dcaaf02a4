"""The agent protocol: `run(sandbox, task, timeout)` works in the sandbox and returns an AgentResult.

An agent that runs out of time raises AgentTimeoutError and one that overflows its model's
context raises ContextOverflowError; both carry the partial result, and the trial is still graded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel

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


def get_agent(name: str) -> Agent:
    from trialbook.agents.nop import NopAgent
    from trialbook.agents.oracle import OracleAgent

    agents: dict[str, type] = {"oracle": OracleAgent, "nop": NopAgent}
    if name not in agents:
        raise UserError(f"unknown agent '{name}' (known: {', '.join(sorted(agents))})")
    return agents[name]()

"""The nop agent: does nothing, so the verifier sees the task's starting state (should resolve nothing)."""

from __future__ import annotations

from trialbook.agents.base import AgentResult
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec


class NopAgent:
    name = "nop"

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        return AgentResult(exit_code=0, log="", turns=0)

"""The installed-agent kind: one shell command run inside the trial's sandbox (`--agent-cmd 'CMD'`).

For an agent CLI the task's image already holds (Harbor's installed agents: claude-code, codex, aider,
...), or any script. The command runs with `bash -c` in the task's workdir, as the sandbox's user, under
the agent's time limit; it reads the task from `$TRIALBOOK_INSTRUCTION` (the instruction's text) and
may read `$TRIALBOOK_TIMEOUT_S`. What it prints (stdout and stderr together) is its trajectory: the trial's
agent log (`trialbook log ID --agent`, `agent/log.txt` in the trial folder). Its exit status is kept
(`extra.agent_exit_code`); the sandbox is graded whatever it is, as every agent's is.
"""

from __future__ import annotations

from typing import Any

from trialbook.agents.base import AgentResult, AgentTimeoutError
from trialbook.errors import UserError
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec


class CommandAgent:
    name = "cmd"

    def __init__(self, command: str) -> None:
        self.command = command

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> CommandAgent:
        command = options.get("command")
        if not isinstance(command, str) or not command.strip():
            raise UserError("the cmd agent needs a command: --agent-cmd 'CMD'")
        return cls(command)

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        env = {"TRIALBOOK_INSTRUCTION": task.instruction, "TRIALBOOK_TIMEOUT_S": f"{timeout:g}"}
        res = sandbox.exec(["bash", "-c", self.command], timeout=timeout, env=env, workdir=task.workdir)
        result = AgentResult(
            exit_code=res.exit_code, log=res.output, duration_s=res.duration_s, info={"command": self.command}
        )
        if res.timed_out:
            raise AgentTimeoutError(f"--agent-cmd ran past its {timeout:g} s limit", result)
        return result

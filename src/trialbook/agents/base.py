"""The agent protocol: `run(sandbox, task, timeout)` works in the sandbox and returns an AgentResult.

An agent that runs out of time raises AgentTimeoutError and one that overflows its model's
context raises ContextOverflowError; both carry the partial result, and the trial is still graded.

Your own agent (`trialbook run TASKS --agent my_pkg.agent:MyAgent` or `--agent path/agent.py:MyAgent`;
examples/agents/ has one of about 30 lines) is any class with:
- `name: str`, recorded on every trial (`extra.agent`); the class name if it has none;
- `run(self, sandbox, task, timeout) -> AgentResult`: `task` is the TaskSpec (`task.instruction`, the
  task's text; `task.workdir`, `task.task_id`); `sandbox.exec(["bash", "-c", "..."], timeout=...)` runs a
  command in the trial's container and returns its `exit_code`, `output`, `timed_out`, `duration_s`;
  `sandbox.read_file(path)` reads a file. Spend at most `timeout` seconds (the harness also cuts every
  exec at that budget); on running out raise AgentTimeoutError(message, partial AgentResult);
- optionally `from_options(cls, options) -> agent`, a classmethod, when it takes options, and
  `stack(self) -> dict` for an LLM agent's serving engine (what `compare` warns about when it differs).
It is built once per trial process (no arguments, or from_options), so it must not keep one trial's state
for the next. The harness does the rest as for the built-in agents: the sandbox's limits, the error
policy (`trialbook policy`), the diff carried to fresh verifier containers, the trial record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from trialbook.errors import UserError
from trialbook.outcomes import ErrorKind

if TYPE_CHECKING:
    from trialbook.sandbox import Box
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
    kind = ErrorKind.AGENT_TIMEOUT


class ContextOverflowError(AgentStopped):
    kind = ErrorKind.CONTEXT_OVERFLOW


class FormatError(AgentStopped):
    kind = ErrorKind.FORMAT


class Agent(Protocol):
    name: str

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult: ...


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


# which agent takes which option (the command line's flags, by their agent_options key)
def _takes(agent: str) -> tuple[str, ...]:
    """The options `agent` takes: mini's are its MiniOptions fields (imported here: base imports no agent)."""
    if agent == "mini":
        from trialbook.agents.mini_config import MiniOptions

        return tuple(MiniOptions.model_fields)
    from trialbook.agents.installed import CLI_AGENTS  # the installed CLIs (rl/cli_agents.py): one list of them

    return ("endpoints", "model") if agent in CLI_AGENTS else OTHERS.get(agent, ())


# the options of the agents other than mini and the installed CLIs (agents/miniswe.py, agents/command.py)
OTHERS: dict[str, tuple[str, ...]] = {
    "mini-swe-agent": ("endpoints", "model", "max_turns"),
    "mini-swe-agent-backticks": ("endpoints", "model", "max_turns"),
    "cmd": ("command",),
}


FLAGS = {"endpoints": "--endpoint", "command": "--agent-cmd", "max_output_tokens": "--max-output-tokens",
         "headers": "--header", "agent_config": "--agent-config"}  # fmt: skip


def option_error(who: str, exc: ValueError) -> UserError:
    """An agent's options that do not validate (pydantic's first error, else the exception's text), as one line."""
    first = exc.errors()[0] if hasattr(exc, "errors") else {"loc": (), "msg": str(exc)}
    where = ".".join(str(p) for p in first.get("loc", ()))
    return UserError(f"{who} option {where}: {first.get('msg')}")


def agent_options(agent: str, **given: Any) -> dict[str, Any]:
    """Agent options from command-line flags (None: not given); only mini and cmd take any."""
    options = {k: v for k, v in given.items() if v not in (None, [], ())}
    wrong = [k for k in options if k not in _takes(agent)]
    if wrong:
        owner = "cmd" if wrong[0] == "command" else "mini"
        flags = ", ".join(FLAGS.get(k, "--" + k.replace("_", "-")) for k in wrong)
        raise UserError(f"{flags}: only the {owner} agent takes these options")
    return options

"""An episode driven from outside, turn by turn: a trainer's environment (TRL's `environment_factory`, a
verifiers environment) calls `bash(command)` as the model's tool calls come, and the trial is still one
trialbook trial, run by the harness's own entry point (`Rollouts`): the task's sandbox, its isolation, the
verifier, the outcome rules and the ledger row.

    episode = Episode.start(rollouts, "plain-bugfix", attempt=0)   # the sandbox starts (or the trial fails)
    episode.bash("pytest -q")                                      # runs in the sandbox
    pending = episode.finish()                                     # the agent ends, the verifier grades

The harness calls the `Remote` agent's `run(sandbox, task, timeout)` in a thread of its own; that thread
executes the commands sent to it until `finish()`. A trial that fails before the agent starts (an image that
cannot be built: infra_error) ends the episode at once: `bash` answers that the sandbox is unavailable and
`finish()` returns the failed trial, which the rewards policy masks.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from trialbook.agents.base import AgentResult, AgentTimeoutError

if TYPE_CHECKING:
    from trialbook.rl.rollout import Pending, Rollouts
    from trialbook.sandbox import Box
    from trialbook.tasks import TaskSpec

_DONE = object()
UNAVAILABLE = "error: the sandbox is not available (the trial failed before the agent started)"


@dataclass
class Remote:
    """The agent the harness runs: executes commands from `inbox` until told to stop."""

    command_timeout: float = 60.0
    max_output: int = 4000
    name: str = "remote"
    inbox: queue.Queue[Any] = field(default_factory=queue.Queue)
    outbox: queue.Queue[str] = field(default_factory=queue.Queue)
    started: threading.Event = field(default_factory=threading.Event)
    log: list[str] = field(default_factory=list)
    commands: int = 0

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        from trialbook.agents.mini import SandboxEnvironment

        start = time.monotonic()
        deadline = start + timeout
        env = SandboxEnvironment(sandbox, deadline, self.command_timeout)
        self.started.set()
        timed_out = False
        while True:
            try:
                item = self.inbox.get(timeout=max(deadline - time.monotonic(), 0.05))
            except queue.Empty:  # the trainer took longer than the task's agent budget: graded as agent_timeout
                timed_out = True
                break
            if item is _DONE:
                break
            self.commands += 1
            try:
                out = env.execute({"command": item})
                text = f"<returncode>{out['returncode']}</returncode>\n{out['output'][-self.max_output :]}"
            except Exception as exc:  # a Submitted/TimeExceeded signal or a broken sandbox: the model sees it
                text = f"error: {type(exc).__name__}: {str(exc)[:300]}"
            self.log.append(f"--- tool bash\n$ {item}\n{text}")
            self.outbox.put(text)
        status = "TimeExceeded" if timed_out else "Submitted"
        result = AgentResult(
            exit_code=None if timed_out else 0, log="\n".join(self.log) + "\n",
            duration_s=round(time.monotonic() - start, 3), turns=self.commands,
            info={"exit_status": status, "submitted": not timed_out, "commands": self.commands},
        )  # fmt: skip
        if timed_out:
            raise AgentTimeoutError(f"the trainer's episode ran past the agent's {timeout:g} s budget", result)
        return result


class Episode:
    def __init__(self, rollouts: Rollouts, task_id: str, attempt: int, group_id: str | None) -> None:
        self.rollouts, self.task_id, self.attempt = rollouts, task_id, attempt
        self.agent = Remote()
        self._pending: Pending | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(group_id,), daemon=True, name=f"episode-{task_id}")

    @classmethod
    def start(cls, rollouts: Rollouts, task_id: str, attempt: int, group_id: str | None = None) -> Episode:
        ep = cls(rollouts, task_id, attempt, group_id)
        ep._thread.start()
        while not ep.agent.started.wait(0.2) and ep._thread.is_alive():
            pass
        return ep

    def _run(self, group_id: str | None) -> None:
        try:
            run = self.rollouts._run_agent(self.agent, self.task_id, self.attempt, group_id, None)
            self._pending = asyncio.run(run)
        except BaseException as exc:  # re-raised by finish() in the trainer's thread
            self._error = exc
        finally:
            self.agent.started.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and self._pending is None

    def bash(self, command: str) -> str:
        if not self.running:
            return UNAVAILABLE
        self.agent.inbox.put(command)
        while True:
            try:
                return self.agent.outbox.get(timeout=0.5)
            except queue.Empty:
                if not self._thread.is_alive():
                    return UNAVAILABLE

    def stop(self) -> None:
        """End the agent: the harness then grades the sandbox (in the episode's thread)."""
        self.agent.inbox.put(_DONE)

    def finish(self) -> Pending:
        """End the agent, wait for the verifier, and return the finished trial."""
        self.stop()
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._pending is not None
        return self._pending

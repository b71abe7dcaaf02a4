"""The oracle agent: runs the task's known solution, `solution/solve.sh`."""

from __future__ import annotations

from trialbook.agents.base import AgentResult, AgentTimeoutError
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec


class OracleAgent:
    name = "oracle"

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        if not (task.solution_dir / "solve.sh").is_file():
            return AgentResult(exit_code=None, log="oracle: the task has no solution/solve.sh\n")
        files = [p for p in task.solution_dir.rglob("*") if p.is_file()]
        if len(files) == 1:  # solve.sh alone: pass it inline (a copy into the container costs ~0.1 s)
            script = files[0].read_text()
            res = sandbox.exec(["bash", "-c", script, "solve.sh"], timeout=timeout)
        else:
            sandbox.put_dir(task.solution_dir, "/solution")
            res = sandbox.exec(["bash", "/solution/solve.sh"], timeout=timeout)
        result = AgentResult(exit_code=res.exit_code, log=res.output, duration_s=res.duration_s, turns=1)
        if res.timed_out:
            raise AgentTimeoutError(f"oracle solve.sh ran past its {timeout:g} s limit", result)
        return result

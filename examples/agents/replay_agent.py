"""An example agent of your own: replays recorded shell steps, one file of them per task.

    trialbook run examples/tasks --agent examples/agents/replay_agent.py:ReplayAgent --run replay

Each line of replays/<task_id>.sh is one step (what a model, or a person, decided to run); a task
without a file gets no steps. Make `steps()` ask your model instead and it is an LLM agent.
The protocol is documented in trialbook/agents/base.py.
"""

import json
from pathlib import Path

from trialbook.agents.base import AgentResult, AgentTimeoutError

REPLAYS = Path(__file__).parent / "replays"


class ReplayAgent:
    name = "replay"

    def steps(self, task):
        path = REPLAYS / f"{task.task_id}.sh"
        return [line for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []

    def run(self, sandbox, task, timeout):
        trajectory, log, timed_out = [], "", False
        for step in self.steps(task):
            res = sandbox.exec(["bash", "-c", step], timeout=timeout, workdir=task.workdir)
            trajectory.append({"command": step, "exit_code": res.exit_code, "output": res.output})
            log += f"+ {step}\n{res.output}"  # as `bash -x` shows a step
            if timed_out := res.timed_out:
                break
        files = {"trajectory.json": json.dumps(trajectory, indent=1)}
        result = AgentResult(exit_code=0, log=log, turns=len(trajectory), files=files)
        if timed_out:
            raise AgentTimeoutError(f"step {len(trajectory)} ran past {timeout:g} s", result)
        return result

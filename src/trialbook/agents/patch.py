"""The patch agent: applies a given patch (a prediction's `model_patch`, a stored trial's change) and stops.

`trialbook grade` and `trialbook reverify` run it, so a patch is graded exactly as an agent's change is:
the task's own container, its limits, the diff carried to fresh verifier containers, the error policy.
The patch is applied as SWE-bench's harness applies one: `git apply`, then `git apply --reject`, then
`patch --fuzz=5`; a patch none of them applies is graded on what they left (`--reject` keeps the hunks
that apply, as in the harness), and an empty patch is graded as the untouched task. `extra.agent_info.patch`
says which happened.
"""

from __future__ import annotations

from typing import Any

from trialbook.agents.base import AgentResult, AgentTimeoutError
from trialbook.errors import UserError
from trialbook.sandbox import Box
from trialbook.sandbox.box import tar_text
from trialbook.tasks import TaskSpec

PATCH_FILE = "/tmp/trialbook-prediction.patch"
APPLY = (  # the first way that works; git apply --reject keeps the hunks that apply, as the harness does
    'for how in "git apply --verbose" "git apply --verbose --reject" "patch --batch --fuzz=5 -p1 -i"; do'
    f' if $how {PATCH_FILE}; then echo "applied with: $how"; exit 0; fi; done; exit 1'
)


class PatchAgent:
    name = "patch"

    def __init__(self, patches: dict[str, dict[str, str]], attempt: int = 0) -> None:
        self.patches = patches  # task_id -> {attempt: patch}
        self.attempt = attempt

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> PatchAgent:
        patches = options.get("patches")
        if not isinstance(patches, dict):
            raise UserError("the patch agent is run by `trialbook grade` and `trialbook reverify`")
        return cls(patches, int(options.get("attempt", 0)))

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        patch = self.patches.get(task.task_id, {}).get(str(self.attempt))
        if not patch or not patch.strip():
            return AgentResult(exit_code=0, log="empty patch: nothing applied\n", turns=0, info={"patch": "empty"})
        sandbox.put_tar("/", tar_text(PATCH_FILE.lstrip("/"), patch))
        res = sandbox.exec(["bash", "-c", APPLY], timeout=timeout, workdir=task.workdir)
        how = "applied" if res.exit_code == 0 else "did not apply"
        result = AgentResult(exit_code=res.exit_code, log=res.output, duration_s=res.duration_s, turns=1,
                             info={"patch": how})  # fmt: skip
        if res.timed_out:
            raise AgentTimeoutError(f"applying the patch ran past {timeout:g} s", result)
        return result

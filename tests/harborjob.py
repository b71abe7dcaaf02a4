"""A copy of a real shared Harbor job with the files Harbor writes in each trial folder added
(harbor.models.trial.paths.TrialPaths): the shared jobs' agent logs were not published. Per trial: an ATIF
trajectory, the agent's text log, a binary session file, the verifier's stdout, a CTRF per-test report,
a patch under artifacts/, trial.log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from paths import HARBOR_JOBS

CODEX = HARBOR_JOBS / "gpt52-codex-stacked-v2"


def _atif(task: str) -> dict:
    return {
        "schema_version": "ATIF-v1.4",
        "session_id": f"s-{task}",
        "agent": {"name": "codex", "version": "0.98.0", "model_name": "gpt-5.2-codex"},
        "steps": [
            {"step_id": 1, "source": "user", "message": f"Solve {task}"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "Running the tests first.",
                "tool_calls": [{"tool_call_id": "c1", "function_name": "shell", "arguments": {"cmd": "pytest -q"}}],
                "observation": {"results": [{"source_call_id": "c1", "content": "3 passed, 1 failed"}]},
            },
        ],
        "final_metrics": {"total_prompt_tokens": 1200, "total_completion_tokens": 300},
    }


def _ctrf(passed: list[str], failed: list[str]) -> dict:
    tests = [{"name": n, "status": "passed", "duration": 1} for n in passed]
    tests += [{"name": n, "status": "failed", "duration": 1} for n in failed]
    tests.append({"name": "test_gpu_only", "status": "skipped", "duration": 0})
    return {"results": {"tool": {"name": "pytest"}, "summary": {"tests": len(tests)}, "tests": tests}}


def exported_job(root: Path) -> Path:
    job = root / CODEX.name
    shutil.copytree(CODEX, job)
    for trial in (p for p in job.iterdir() if p.is_dir()):
        task = json.loads((trial / "result.json").read_text())["task_name"]
        (trial / "agent").mkdir(exist_ok=True)
        (trial / "agent" / "trajectory.json").write_text(json.dumps(_atif(task)))
        (trial / "agent" / "codex.txt").write_text(f"codex exec: {task}\n")
        (trial / "agent" / "sessions").mkdir()
        (trial / "agent" / "sessions" / "state.bin").write_bytes(b"\x00\x01\x02binary")
        (trial / "verifier" / "test-stdout.txt").write_text("test_api PASSED\ntest_ui FAILED\n")
        (trial / "verifier" / "ctrf.json").write_text(json.dumps(_ctrf(["test_api", "test_db"], ["test_ui"])))
        (trial / "artifacts").mkdir()
        (trial / "artifacts" / "changes.patch").write_text("--- a/app.py\n+++ b/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n")
        (trial / "trial.log").write_text("trial started\n")
    return job

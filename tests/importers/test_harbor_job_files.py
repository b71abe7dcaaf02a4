"""`import harbor` keeps a trial folder's files, refuses what is not a job, and takes a folder of jobs.

The jobs are the real shared ones; their agent logs were not published, so one test adds to a copy of a
real job the files Harbor writes in a trial folder (harbor.models.trial.paths.TrialPaths): an ATIF
trajectory, the verifier's stdout, a CTRF per-test report, reward.txt, a patch, a binary agent file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from paths import EXAMPLES, HARBOR_JOBS

CODEX = HARBOR_JOBS / "gpt52-codex-stacked-v2"


def _runs(cli) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(cli("runs", "--json").stdout)}


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


def test_exported_job_keeps_every_trial_file(cli, db, tmp_path):
    job = exported_job(tmp_path)
    res = cli("import", "harbor", str(job), "--run", "codex")
    assert res.exit_code == 0, res.stderr
    from trialbook.ledger.store import Ledger
    from trialbook.web.text import trajectory_turns

    ledger = Ledger(db)
    trials = {t.task_id: t for t in ledger.trial_rows(ledger.get_run("codex").id)}
    assert set(trials) == {"full-stack", "tier0-smoke-test"}
    t = trials["full-stack"]
    assert t.reward == 0.292  # the real job's composite_score
    assert t.tests == {"tests": {"test_api": "pass", "test_db": "pass", "test_ui": "fail"}}  # skipped: not run
    reward_json = (CODEX / "full-stack__PFQnmVb" / "verifier" / "reward.json").read_text()
    assert ledger.artifact(t.id, "verifier/reward.json") == reward_json
    assert ledger.artifact(t.id, "verifier/test-stdout.txt") == "test_api PASSED\ntest_ui FAILED\n"
    assert ledger.artifact(t.id, "patch.diff") == ledger.artifact(t.id, "artifacts/changes.patch")
    assert "+x = 2" in (ledger.artifact(t.id, "patch.diff") or "")
    trajectory = ledger.artifact(t.id, "agent/trajectory.json")
    assert trajectory and json.loads(trajectory)["schema_version"] == "ATIF-v1.4"
    turns = trajectory_turns(trajectory)
    assert turns and any("3 passed, 1 failed" in str(turn) for turn in turns)  # the web's trajectory view reads it
    assert ledger.artifact(t.id, "trial.log") == "trial started\n"
    assert ledger.artifact(t.id, "agent/sessions/state.bin") is None
    assert t.extra and t.extra["files_left_out"] == ["agent/sessions/state.bin (binary)"]
    assert "agent/trajectory.json" in t.extra["files"]


def test_folder_of_jobs_is_a_run_per_job_or_one_run(cli, tmp_path):
    res = cli("import", "harbor", str(HARBOR_JOBS))
    assert res.exit_code == 0, res.stderr
    jobs = sorted(p.name for p in HARBOR_JOBS.iterdir() if p.is_dir())
    assert res.stderr.count("imported") == len(jobs) and set(_runs(cli)) == set(jobs)
    per_job = sum(r["trials"] for r in _runs(cli).values())
    res = cli("import", "harbor", str(HARBOR_JOBS), "--run", "all-jobs")
    assert res.exit_code == 0, res.stderr
    assert _runs(cli)["all-jobs"]["trials"] == per_job == 6


def test_not_a_job_is_one_line(cli, tmp_path):
    res = cli("import", "harbor", str(EXAMPLES))  # task folders, not a job: was 6 silent "incomplete" trials
    assert res.exit_code == 2 and "a folder of task folders" in res.stderr and res.stderr.count("\n") == 1
    (tmp_path / "stuff" / "a").mkdir(parents=True)
    (tmp_path / "stuff" / "a" / "notes.txt").write_text("x")
    res = cli("import", "harbor", str(tmp_path / "stuff"))
    assert res.exit_code == 2 and "not a Harbor job" in res.stderr and res.stderr.count("\n") == 1
    assert _runs(cli) == {}

"""Harbor job folders: the real shared jobs, and jobs built in Harbor's exact result.json shape."""

from __future__ import annotations

import json
from pathlib import Path

from paths import HARBOR_JOBS


def show(cli, run: str) -> dict:
    res = cli("show", run, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def trial_result(task: str, trial: str, reward: float | None, exception: str | None, key: str = "reward") -> dict:
    """A TrialResult as harbor.models.trial.result serialises it (fields trialbook reads)."""
    return {
        "id": "00000000-0000-0000-0000-000000000000",
        "task_name": task,
        "trial_name": trial,
        "trial_uri": f"file:///jobs/j/{trial}",
        "task_id": {"path": f"tasks/{task}"},
        "source": None,
        "task_checksum": "0" * 64,
        "config": {"trial_name": trial, "environment": {"type": "docker"}},
        "agent_info": {"name": "terminus-2", "version": "1.0", "model_info": {"name": "m", "provider": "p"}},
        "agent_result": {"n_input_tokens": 100, "n_cache_tokens": None, "n_output_tokens": 20},
        "verifier_result": None if reward is None else {"rewards": {key: reward}},
        "exception_info": None
        if exception is None
        else {"exception_type": exception, "exception_message": "boom", "exception_traceback": "", "occurred_at":
              "2026-01-01T00:00:01"},
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:01:30Z",
        "environment_setup": {"started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:00:10Z"},
        "agent_execution": None,
        "verifier": None,
    }  # fmt: skip


def build_job(root: Path) -> Path:
    job = root / "job"
    cases = [
        ("fix-bug", 1.0, None),
        ("fix-bug", 0.0, None),
        ("slow-task", 1.0, "AgentTimeoutError"),  # timed out after writing a correct fix: resolved
        ("slow-task", 0.0, "AgentTimeoutError"),
        ("long-ctx", 0.0, "ContextLengthExceededError"),
        ("hang", None, "VerifierTimeoutError"),
        ("crash", None, "RuntimeError"),
        ("crash", None, "RewardFileNotFoundError"),
        ("partial", 0.57, None),
        ("agent-exit", 0.0, "NonZeroAgentExitCodeError"),
    ]
    for i, (task, reward, exc) in enumerate(cases):
        trial = f"{task[:32]}__{i:07d}"
        (job / trial).mkdir(parents=True)
        (job / trial / "result.json").write_text(json.dumps(trial_result(task, trial, reward, exc)))
    (job / "cut-off-task__AAAAAAA").mkdir()  # started, never finished: no result.json
    (job / "config.json").write_text(json.dumps({"job_name": "job", "n_attempts": 2}))
    return job


def test_built_job_maps_every_outcome(cli, tmp_path):
    job = build_job(tmp_path)
    res = cli("import", "harbor", str(job), "--run", "h")
    assert res.exit_code == 0, res.stderr
    s = show(cli, "h")
    assert s["outcomes"] == {
        "unresolved": 3, "agent_timeout": 2, "infra_error": 2, "resolved": 1,
        "context_overflow": 1, "verifier_timeout": 1, "incomplete": 1,
    }  # fmt: skip
    assert s["trials"] == 11 and s["judged"] == 7
    assert s["resolved"] == 2  # fix-bug #0 and the timed-out trial with reward 1.0
    assert s["mean_reward"] == round((1 + 0 + 1 + 0 + 0 + 0.57 + 0) / 7, 4)
    assert s["tags"]["AgentTimeoutError"] == 2 and s["tags"]["RuntimeError"] == 1
    assert s["attempts_per_task"] == 2


def test_real_shared_jobs(cli):
    for job in sorted(HARBOR_JOBS.iterdir()):
        assert cli("import", "harbor", str(job)).exit_code == 0
    sonnet = show(cli, "sonnet46-stacked-v2")  # rewards under `composite_score`
    assert sonnet["judged"] == 2 and sonnet["mean_reward"] == round((0.9667 + 0.5252) / 2, 4)
    brick = show(cli, "2026-09-30__08-59-24")
    assert brick["outcomes"] == {"unresolved": 1} and brick["tags"] == {"NonZeroAgentExitCodeError": 1}
    assert brick["stack"]["harness_version"] == "0.18.0"
    haiku = show(cli, "terminus-2-claudehaiku4520-skills-3d-scan-calc-d50cb0")
    assert haiku["resolved"] == 1


def test_bad_harbor_inputs(cli, tmp_path):
    assert cli("import", "harbor", str(tmp_path / "none")).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    res = cli("import", "harbor", str(empty))
    assert res.exit_code == 2 and "not a Harbor job" in res.stderr
    broken = tmp_path / "broken" / "t__1"
    broken.mkdir(parents=True)
    (broken / "result.json").write_text("{oops")
    res = cli("import", "harbor", str(broken.parent))
    assert res.exit_code == 2 and "not valid JSON" in res.stderr
    assert json.loads(cli("runs", "--json").stdout) == []

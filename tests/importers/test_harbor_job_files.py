"""`import harbor` keeps a trial folder's files, refuses what is not a job, and takes a folder of jobs.

The jobs are the real shared ones; their agent logs were not published, so one test adds to a copy of a
real job the files Harbor writes in a trial folder (harbor.models.trial.paths.TrialPaths): an ATIF
trajectory, the verifier's stdout, a CTRF per-test report, reward.txt, a patch, a binary agent file.
"""

from __future__ import annotations

import json

import pytest

from harborjob import CODEX, exported_job
from paths import EXAMPLES, HARBOR_JOBS
from trialbook.errors import InputWarning


def _runs(cli) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(cli("runs", "--json").stdout)}


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
    with pytest.warns(InputWarning, match="mixes 4 agents/models"):  # one run of several agents: said (its own test)
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

"""`trialbook trials RUN [--where] [--task]` and `trialbook log TRIAL [--verifier|--agent|--patch]`, on
imported real data (the official harness logs; a real Harbor job with Harbor's trial files added)."""

from __future__ import annotations

import json

from harborjob import exported_job
from paths import INSTANCES, SWE

LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"


def _sweagent(cli) -> None:
    res = cli("import", "swebench", str(LOGS / "results.json"), "--instances", str(INSTANCES), "--logs", str(LOGS),
              "--run", "sweagent")  # fmt: skip
    assert res.exit_code == 0, res.stderr


def test_trials_lists_filters_and_names_ids(cli):
    _sweagent(cli)
    every = json.loads(cli("trials", "sweagent", "--json").stdout)
    assert len(every["trials"]) == 500 and every["folder"] is None  # imported: no trial folders
    res = cli("trials", "sweagent", "--where", "resolved", "--json")
    resolved = json.loads(res.stdout)["trials"]
    assert len(resolved) == 168 and {t["outcome"] for t in resolved} == {"resolved"}
    (one,) = json.loads(cli("trials", "sweagent", "--task", "psf__requests-2317", "--json").stdout)["trials"]
    assert (one["task_id"], one["outcome"], one["reward"]) == ("psf__requests-2317", "resolved", 1.0)
    human = cli("trials", "sweagent", "--task", "psf__requests-2317")
    assert human.exit_code == 0 and str(one["id"]) in human.stdout and "trialbook log ID" in human.stdout
    res = cli("trials", "sweagent", "--where", "passed")
    assert res.exit_code == 2 and "--where must be one of" in res.stderr
    res = cli("trials", "sweagent", "--task", "nope__nope-1")
    assert res.exit_code == 2 and "no trials of task 'nope__nope-1'" in res.stderr
    assert cli("trials", "ghost").exit_code == 2


def test_log_prints_what_was_stored(cli):
    _sweagent(cli)
    (one,) = json.loads(cli("trials", "sweagent", "--task", "psf__requests-2317", "--json").stdout)["trials"]
    res = cli("log", str(one["id"]), "--verifier")
    assert res.exit_code == 0 and res.stdout == (LOGS / "psf__requests-2317" / "test_output.txt").read_text()
    res = cli("log", str(one["id"]), "--patch")
    assert res.exit_code == 0 and res.stdout == (LOGS / "psf__requests-2317" / "patch.diff").read_text()
    listing = json.loads(cli("log", str(one["id"]), "--json").stdout)
    assert {f["name"] for f in listing["files"]} == {"patch.diff", "report.json", "test_output.txt"}
    res = cli("log", str(one["id"]), "--agent")  # the official logs hold no agent log
    assert res.exit_code == 2 and "no stored agent log" in res.stderr and "test_output.txt" in res.stderr
    assert "give one of" in cli("log", str(one["id"]), "--agent", "--patch").stderr
    errored = json.loads(cli("trials", "sweagent", "--task", "django__django-15375", "--json").stdout)["trials"][0]
    assert "run_instance.log" in cli("log", str(errored["id"])).stdout
    res = cli("log", "999999")
    assert res.exit_code == 2 and "no trial '999999'" in res.stderr


def test_log_by_harbor_trial_name(cli, tmp_path):
    job = exported_job(tmp_path)
    assert cli("import", "harbor", str(job), "--run", "codex").exit_code == 0
    res = cli("log", "full-stack__PFQnmVb", "--agent")
    assert res.exit_code == 0 and json.loads(res.stdout)["schema_version"] == "ATIF-v1.4"
    res = cli("log", "full-stack__PFQnmVb", "--verifier")
    assert res.stdout == "test_api PASSED\ntest_ui FAILED\n"
    assert "+x = 2" in cli("log", "full-stack__PFQnmVb", "--patch").stdout
    assert cli("log", "full-stack__PFQnm").exit_code == 2  # a name is matched whole

"""The sandbox's own limits are not the agent's failure: a verifier that hits the task's memory_mb or
pids_limit, as it does on the image as built too, ends infra_error (SandboxLimitError, with the counts), never a
graded `unresolved` (within them without the change, the change is to blame: tests/harness/cheats/
memory_hog_at_import.sh)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"


def test_oom_and_pids_limit_are_infra_errors(engine, tmp_path, cli, db):
    tasks = tmp_path / "tasks"
    for name, limit in [("oom", "memory_mb = 6"), ("pids", "memory_mb = 512\npids_limit = 1")]:
        shutil.copytree(EXAMPLE, tasks / name)
        toml = (tasks / name / "task.toml").read_text().replace("memory_mb = 512", limit)
        (tasks / name / "task.toml").write_text(toml.replace("timeout_sec = 60", "timeout_sec = 30"))
    # a run name no other module uses: test_harness_docker.py checks that no container of its run `limits` is left,
    # and scripts/test.sh runs the docker modules on two workers side by side
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "sandbox-limits", "--concurrency", "2",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 1 and "error: 2 trial(s) ended infra_error" in res.stderr, res.stderr
    ledger = Ledger(db)
    got = {t["task_id"]: t for t in trial_dicts(ledger, "sandbox-limits")}
    assert got["oom"]["outcome"] == "infra_error", got["oom"]
    assert got["oom"]["exception"] == "SandboxLimitError"
    assert "memory_mb = 6" in got["oom"]["exception_message"] and "oom kills" in got["oom"]["exception_message"]
    assert got["pids"]["outcome"] == "infra_error", got["pids"]
    assert got["pids"]["exception"] == "SandboxLimitError"
    assert "pids limit hits" in got["pids"]["exception_message"]
    assert "verifier_limit_hits" in got["pids"]["extra"]["verifier"]
    # the tests hit the memory limit: asked once without the change, they hit it there too (the task's limits are too
    # tight for its own tests); the harness's git hit the pids limit on the image's own tree: nothing to ask
    assert got["oom"]["extra"]["verifier"]["without_change"]["end"] == "SandboxLimitError"
    assert "while the agent's change was applied" in got["pids"]["exception_message"]
    assert "without_change" not in got["pids"]["extra"]["verifier"]

"""A task's declared shell (workdir, env, shell_setup) is what the agent and the verifier run in.

SWE-bench images keep the repo's Python in a conda env; the seed lost ~3 points to agents running
the wrong interpreter. `tasks from-swebench` declares the env in task.toml; this checks the harness
honours such a declaration on the real daemon.
"""

from __future__ import annotations

import json
from pathlib import Path

from test_harness_docker import run_cli, trials

TASK_TOML = """
[agent]
timeout_sec = 30

[verifier]
timeout_sec = 30

[environment]
docker_image = "trialbook-base:bookworm"
workdir = "/srv/repo"
shell_setup = "export FROM_SETUP=activated; export PATH=/opt/venv/bin:$PATH"

[environment.env]
TASK_VAR = "declared"
"""

SOLVE = """#!/bin/bash
# what the agent sees: its directory, the declared variable, and the shell set-up (kept in the
# working tree: only its diff reaches the verifier)
printf '%s|%s|%s|%s\\n' "$PWD" "$TASK_VAR" "$FROM_SETUP" "${PATH%%:*}" > agent-saw.txt
"""

TEST = """#!/bin/bash
mkdir -p /logs/verifier
expected="/srv/repo|declared|activated|/opt/venv/bin"
if [ "$(cat /srv/repo/agent-saw.txt 2>/dev/null)" = "$expected" ] && [ "$FROM_SETUP" = activated ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "agent saw: $(cat /srv/repo/agent-saw.txt 2>/dev/null); verifier FROM_SETUP=$FROM_SETUP" >&2
  echo 0 > /logs/verifier/reward.txt
fi
"""


def make_task(root: Path) -> Path:
    task = root / "tasks" / "declared-shell"
    (task / "tests").mkdir(parents=True)
    (task / "solution").mkdir()
    (task / "task.toml").write_text(TASK_TOML)
    (task / "instruction.md").write_text("Nothing to fix: the check is where your shell starts.\n")
    (task / "solution" / "solve.sh").write_text(SOLVE)
    (task / "tests" / "test.sh").write_text(TEST)
    return task.parent


def test_agent_and_verifier_start_in_the_declared_shell(engine, tmp_path):
    tasks = make_task(tmp_path)
    db = str(tmp_path / "ledger.db")
    code, _, err = run_cli(db, "run", str(tasks), "--agent", "oracle", "--run", "shell",
                           "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert code == 0, err
    (trial,) = trials(db, "shell")
    assert trial["outcome"] == "resolved", json.dumps(trial, default=str)[:2000]

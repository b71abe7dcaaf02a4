"""Fault (e): the network bridge under a run's daemon disappears mid-run (its device deleted from the host, as a
dockerd started with `--bridge none` deletes docker0). The daemon is a dockerd of the test's own with a bridge of
its own; the main daemon's docker0 is never touched. The run stops with one line naming the bridge; with the
bridge back, `resume` runs the rest and `rerun --where infra_error` the trials it cost: each (task, attempt) once
among current trials, the ledger check passes, no container left."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import EXAMPLES, OwnDockerd, assert_whole, recorded, tb, wait_for

TASKS = 6


@pytest.fixture()
def own_dockerd(engine) -> Iterator[OwnDockerd]:
    daemon = OwnDockerd()
    yield daemon
    daemon.close()


def networked_copies(tmp_path: Path, n: int) -> Path:
    """Copies of plain-bugfix whose sandbox has the internet (the daemon's bridge) and whose solution takes 2 s."""
    tasks = tmp_path / "tasks"
    for i in range(n):
        task = tasks / f"net-{i}"
        shutil.copytree(EXAMPLES / "plain-bugfix", task)
        toml = task / "task.toml"
        toml.write_text(toml.read_text().replace("[environment]\n", "[environment]\nallow_network = true\n"))
        solve = task / "solution" / "solve.sh"
        solve.write_text(solve.read_text().replace("#!/bin/bash\n", "#!/bin/bash\nsleep 2\n", 1))
    return tasks


def test_a_bridge_gone_mid_run_stops_it_with_one_line_naming_it(
    own_dockerd: OwnDockerd, db: str, tmp_path: Path
) -> None:
    env = {"DOCKER_HOST": own_dockerd.url}
    tasks = networked_copies(tmp_path, TASKS)
    args = ["--agent", "oracle", "--concurrency", "2", "--stop-after-errors", "2", "--no-warm-pool",
            "--runs-dir", str(tmp_path / "runs"), "--db", db]  # fmt: skip
    run = tb("run", str(tasks), "--run", "br", *args, env=env)
    try:
        wait_for(lambda: recorded(db, "br") >= 1, 120, "the first trial in the ledger")
        subprocess.run(["ip", "link", "del", own_dockerd.bridge], check=True)  # only the test daemon's own bridge
        code = run.wait(300)
    finally:
        run.kill()
    assert code == 1, run.err
    (line,) = [line for line in run.lines if f"bridge {own_dockerd.bridge} is gone" in line]  # one line, naming it
    assert line.startswith("error: stopped: 2 trials in a row ended ContainerStartError"), line
    assert "`trialbook resume br`" in line
    own_dockerd.add_bridge()
    again = tb("resume", "br", "--db", db, env=env)
    assert again.wait(300) == 0, again.err
    fixed = tb("rerun", "br", "--where", "infra_error", "--db", db, env=env)
    assert fixed.wait(300) == 0, fixed.err
    assert_whole(db, "br", 1, own_dockerd.url, tasks=tuple(f"net-{i}" for i in range(TASKS)))

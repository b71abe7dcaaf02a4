"""Faults of the run's container engine, on a dockerd of the module's own (its socket, data root and bridge; the main
daemon and its docker0 are never touched), started once for both tests:

(d) the only Docker daemon a run uses restarts while four trials run on it, down 15 s (longer than the retries'
backoff). The trials it cut (their containers killed from outside, the API gone) are never graded as cut: each is
retried once the daemon answers again, one line saying the run waits for it; the run completes, every trial resolved.

(e) the network bridge under the daemon disappears mid-run (its device deleted from the host, as a dockerd started
with `--bridge none` deletes docker0). The run stops with one line naming the bridge; with the bridge back, `resume`
runs the rest.

Each ends with the ledger check, every (task, attempt) recorded once, no container left."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import EXAMPLES, OwnDockerd, assert_whole, containers, recorded, tb, wait_for

from trialbook.ledger.store import Ledger

TASKS = 4  # (d): one trial each, all running when the daemon goes
NET_TASKS = 6  # (e): enough left after the bridge goes for --stop-after-errors 2 to stop the run


@pytest.fixture(scope="module")
def own_dockerd(engine) -> Iterator[OwnDockerd]:
    daemon = OwnDockerd()
    yield daemon
    daemon.close()


def slow_copies(tmp_path: Path, n: int) -> Path:
    """Copies of plain-bugfix whose solution waits 20 s first (the daemon goes mid-trial at any machine load)."""
    tasks = tmp_path / "tasks"
    for i in range(n):
        task = tasks / f"slow-{i}"
        shutil.copytree(EXAMPLES / "plain-bugfix", task)
        solve = task / "solution" / "solve.sh"
        solve.write_text(solve.read_text().replace("#!/bin/bash\n", "#!/bin/bash\nsleep 20\n", 1))
    return tasks


def test_a_restart_of_the_runs_daemon_costs_no_trial(own_dockerd: OwnDockerd, db: str, tmp_path: Path) -> None:
    env = {"DOCKER_HOST": own_dockerd.url}
    args = ["--agent", "oracle", "--concurrency", "4", "--runs-dir", str(tmp_path / "runs"), "--db", db]
    run = tb("run", str(slow_copies(tmp_path, TASKS)), "--run", "dr", *args, env=env)
    try:
        wait_for(lambda: len(containers("dr", own_dockerd.url)) >= 4, 120, "four trials running on the daemon")
        time.sleep(2)
        own_dockerd.stop()
        time.sleep(15)  # longer than the retries' backoff (2 s, 4 s): only waiting for the daemon saves the trials
        own_dockerd.start()
        code = run.wait(300)
    finally:
        run.kill()
    (line,) = [line for line in run.lines if "does not answer" in line] or [run.err]  # said once, naming the daemon
    assert line.startswith(f"warning: container engine {own_dockerd.url} does not answer"), line
    assert code == 0, run.err
    rows = list(Ledger(db).trial_rows(Ledger(db).get_run("dr").id))
    assert all(t.outcome == "resolved" for t in rows)  # the cut trials were retried, never graded as cut
    assert any((t.extra or {}).get("retries") for t in rows), "the restart cut no trial"
    assert_whole(db, "dr", 1, own_dockerd.url, tasks=tuple(f"slow-{i}" for i in range(TASKS)))


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
    tasks = networked_copies(tmp_path, NET_TASKS)
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
    cost = [t for t in Ledger(db).trial_rows(Ledger(db).get_run("br").id) if t.outcome == "infra_error"]
    assert cost and all(own_dockerd.bridge in (t.exception_message or "") for t in cost)  # never graded
    assert_whole(db, "br", 1, own_dockerd.url, tasks=tuple(f"net-{i}" for i in range(NET_TASKS)))

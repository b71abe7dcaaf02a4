"""Fault (d): the only Docker daemon a run uses (a dockerd of the test's own, never the main one) restarts while
four trials run on it, down 15 s (longer than the retries' backoff). The trials it cut (their containers killed
from outside, the API gone) are never graded as cut: each is retried once the daemon answers again, one line saying
the run waits for it; the run completes, every trial resolved and recorded once, the ledger check passes, no
container left."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import EXAMPLES, OwnDockerd, assert_whole, containers, tb, wait_for

from trialbook.ledger.store import Ledger

TASKS = 4


@pytest.fixture()
def own_dockerd(engine) -> Iterator[OwnDockerd]:
    daemon = OwnDockerd()
    yield daemon
    daemon.close()


def slow_copies(tmp_path: Path, n: int) -> Path:
    """Copies of plain-bugfix whose solution waits a few seconds first (time for the daemon to go mid-trial)."""
    tasks = tmp_path / "tasks"
    for i in range(n):
        task = tasks / f"slow-{i}"
        shutil.copytree(EXAMPLES / "plain-bugfix", task)
        solve = task / "solution" / "solve.sh"
        solve.write_text(solve.read_text().replace("#!/bin/bash\n", "#!/bin/bash\nsleep 6\n", 1))
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
    (line,) = [line for line in run.lines if "does not answer" in line]  # said once, naming the daemon
    assert line.startswith(f"warning: container engine {own_dockerd.url} does not answer"), line
    assert code == 0, run.err
    rows = list(Ledger(db).trial_rows(Ledger(db).get_run("dr").id))
    assert all(t.outcome == "resolved" for t in rows)  # the cut trials were retried, never graded as cut
    assert any((t.extra or {}).get("retries") for t in rows), "the restart cut no trial"
    assert_whole(db, "dr", 1, own_dockerd.url, tasks=tuple(f"slow-{i}" for i in range(TASKS)))

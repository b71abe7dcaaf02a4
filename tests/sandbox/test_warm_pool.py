"""The warm sandbox pool (sandbox/warm.py) on the real daemon: containers started ahead of need are
each handed to one trial only, keep the task's limits and `--network none`, and a pool left by a
killed run is removed by `resume`. Every container here carries a run label unique to the test."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from trialbook.harness.placement.executors import LocalExecutor
from trialbook.harness.run.config import PlannedTrial, RunConfig
from trialbook.harness.run.execute import execute
from trialbook.harness.run.stack import connect
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.sandbox import BoxSpec
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.sandbox.warm import LABEL_POOL
from trialbook.tasks import load_task

pytestmark = pytest.mark.docker

# The agent and the verifier each refuse a container someone already used, and print its hostname
# (the container id's first 12 hex digits): a reused container fails the trial and shows in the ids.
SOLVE = 'test ! -e /tmp/used || exit 1; touch /tmp/used; cd /testbed && echo "fixed $(hostname)" > answer.txt; {extra}'
TEST = (
    'test ! -e /tmp/vused && touch /tmp/vused && echo "verifier-host $(hostname)"; mkdir -p /logs/verifier;'
    " if grep -q fixed /testbed/answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
)


def make_task(root: Path, name: str = "warm", extra: str = "true") -> Path:
    task = root / "tasks" / name
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        "[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n"
        "[environment]\nmemory_mb = 256\npids_limit = 64\ncpus = 0.5\n"
    )
    (task / "instruction.md").write_text("Write 'fixed' to /testbed/answer.txt.\n")
    (task / "environment" / "Dockerfile").write_text("FROM trialbook-base:bookworm\nWORKDIR /testbed\n")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\n" + SOLVE.format(extra=extra) + "\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\n" + TEST + "\n")
    return task


def containers(engine, run: str) -> list:
    return engine.containers.list(all=True, sparse=True, filters={"label": f"{LABEL_RUN}={run}"})


def test_a_pooled_container_never_serves_two_trials(engine, tmp_path):
    run = f"warm-once-{secrets.token_hex(3)}"
    task = make_task(tmp_path)
    spec = load_task(task)
    tb = connect()
    ledger = Ledger(str(tmp_path / "l.db"))
    config = RunConfig(tasks_dir=str(task.parent), agent="oracle", concurrency=2, runs_dir=str(tmp_path / "runs"))
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name=run, config=config.model_dump()))
    results = []
    try:
        plans = [PlannedTrial(spec, a) for a in range(6)]
        tally = execute(ledger, LocalExecutor(tb), run_id, run, config, plans, on_result=results.append)
    finally:
        tb.clean(run)
    assert tally.resolved == 6, [r.trial.exception_message for r in results]
    assert tb.pool_stats["taken"] >= 6, tb.pool_stats  # most containers came from the pool
    # verifier containers: the image's side diffed while warm, when the daemon host has a core to spare
    # (test_warm_containers_are_prepared_only_with_a_core_to_spare covers both cases on any machine)
    assert tb.pool_stats["prepared"] >= 3 if tb.prepare_ahead else tb.pool_stats["prepared"] == 0, tb.pool_stats
    agents = [r.extra_files["patch.diff"].split("fixed ")[1].split()[0] for r in results]
    verifiers = [r.verifier_log.split("verifier-host ")[1].split()[0] for r in results]
    assert len(set(agents + verifiers)) == 12, (agents, verifiers)  # 12 containers, none twice
    assert containers(engine, run) == []  # the pool's waiting containers went with the run


def test_pooled_containers_keep_limits_and_network_none(engine, tmp_path):
    run = f"warm-limits-{secrets.token_hex(3)}"
    tb = connect()
    pool = tb.open_pool(1)
    pool.plan({("t", "agent"): 3})
    spec = BoxSpec("trialbook-base:bookworm", {LABEL_RUN: run, "trialbook.task": "t"}, cpus=0.5, memory_mb=256,
                   pids_limit=64, network=False)  # fmt: skip
    try:
        first = tb.start(spec, f"tb-{run}-cold")
        end = time.monotonic() + 60
        while not containers_with_pool_label(engine, run) and time.monotonic() < end:
            time.sleep(0.2)
        time.sleep(1.0)  # the pooled container's start completes after its creation is visible
        second = tb.start(spec, f"tb-{run}-second")
        assert pool.stats["taken"] == 1, pool.stats
        info = engine.api.inspect_container(second.id)
        assert info["Config"]["Labels"].get(LABEL_POOL) == "1"
        host = info["HostConfig"]
        assert host["Memory"] == 256 * 2**20 and host["PidsLimit"] == 64 and host["NanoCpus"] == 5 * 10**8
        assert host["NetworkMode"] == "none"
        net = second.exec(["ls", "/sys/class/net"], timeout=30)
        assert net.output.split() == ["lo"], net.output  # no interface but loopback
        assert second.id != first.id
        first.remove()
        second.remove()
    finally:
        tb.close_pool()
        tb.clean(run)
    assert containers(engine, run) == []


def test_warm_containers_are_prepared_only_with_a_core_to_spare(engine, tmp_path):
    run = f"warm-prep-{secrets.token_hex(3)}"
    cores = int(engine.info()["NCPU"])
    tb = connect()
    spec = BoxSpec("trialbook-base:bookworm", {LABEL_RUN: run, "trialbook.task": "t"}, cpus=0.5, memory_mb=256,
                   pids_limit=64, network=False)  # fmt: skip
    ran: list[str] = []
    prepare = ("verifier", lambda box: ran.append(box.id) or "stage")
    try:
        for concurrency, ahead in ((cores - 1, True), (cores, False)):
            pool = tb.open_pool(concurrency)
            assert tb.prepare_ahead is ahead
            pool.plan({("t", "verifier"): 1})
            tb.ahead(replace(spec, prepare=prepare))  # warms one; the start below waits for it
            box = tb.start(replace(spec, prepare=prepare), f"tb-{run}-v{concurrency}")
            assert pool.stats["taken"] == 1 and pool.stats["created"] == 1, pool.stats
            assert (box.prepared, ran) == (("stage", [box.id]) if ahead else (None, []))
            box.remove()
            tb.close_pool()
            ran.clear()
    finally:
        tb.close_pool()
        tb.clean(run)
    assert containers(engine, run) == []


def containers_with_pool_label(engine, run: str) -> list:
    """Running or not: a pooled container whose run died stops (its channel's server reads the end of its stdin)."""
    return engine.containers.list(all=True, sparse=True, filters={"label": [f"{LABEL_RUN}={run}", LABEL_POOL]})


def test_kill_9_with_a_warm_pool_then_resume_leaves_no_container(engine, tmp_path, db):
    run = f"warm-kill-{secrets.token_hex(3)}"
    make_task(tmp_path, extra="sleep 2")
    args = ["run", str(tmp_path / "tasks"), "--agent", "oracle", "--run", run, "--attempts", "6",
            "--concurrency", "2", "--runs-dir", str(tmp_path / "runs"), "--db", db]  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-c", "from trialbook.cli import main; main()", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        end = time.monotonic() + 120
        while not containers_with_pool_label(engine, run) and time.monotonic() < end:
            time.sleep(0.2)
        assert containers_with_pool_label(engine, run), "the run never warmed a container"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert containers_with_pool_label(engine, run)  # the killed run's pool is still there ...
    res = subprocess.run([sys.executable, "-c", "from trialbook.cli import main; main()", "resume", run, "--db", db],
                         capture_output=True, text=True)  # fmt: skip
    try:
        assert res.returncode == 0, res.stderr
        assert containers(engine, run) == []  # ... and resume removed it, and its own pool too
        assert len(list(Ledger(db).trial_rows(Ledger(db).get_run(run).id))) == 6
    finally:
        for c in containers(engine, run):
            c.remove(force=True)

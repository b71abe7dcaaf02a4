"""The FAKE backend "fake-sleep" (sandbox/fake.py) and the driver with many trials in flight on it: every trial
recorded once, all of them in flight at once, the ledger written in group commits (harness/trial/writer.recorded)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from trialbook.harness.placement.executors import LocalExecutor
from trialbook.harness.run.config import RunConfig
from trialbook.harness.run.lifecycle import start_run
from trialbook.ledger.store import Ledger
from trialbook.sandbox.backend import Box, BoxSpec
from trialbook.sandbox.box import DaemonError, tar_text
from trialbook.sandbox.fake import FakeSleepBackend, sleep_seconds


def test_sleep_is_the_only_command_it_runs() -> None:
    assert sleep_seconds(["sleep", "2"]) == 2.0
    assert sleep_seconds(["bash", "-c", "sleep 0.5"]) == 0.5
    assert sleep_seconds(["sh", "-c", "exec sleep 3"]) == 3.0
    assert sleep_seconds(["bash", "-c", "sleep 1; rm -rf /"]) is None
    assert sleep_seconds(["python3", "-c", "1"]) is None


def test_a_box_keeps_files_and_its_sleep_is_cut_by_the_stop_event() -> None:
    backend = FakeSleepBackend()
    stop = threading.Event()
    box = backend.start(BoxSpec("img", {"trialbook.run": "r"}, 1, 256, 64), "b1", stop)
    assert isinstance(box, Box)
    box.put_tar("/", tar_text("w/a.txt", "hello"))
    assert box.read_file("/w/a.txt") == b"hello"
    assert box.read_file("/w/none") is None
    threading.Timer(0.2, stop.set).start()
    t = time.monotonic()
    res = box.exec(["sleep", "30"], timeout=60)
    assert res.timed_out and res.exit_code is None and time.monotonic() - t < 10
    assert box.exec(["sleep", "30"], timeout=0.1).timed_out  # its own timeout too
    box.remove()
    assert backend.live() == 0
    with pytest.raises(DaemonError):
        box.exec(["true"], 1)


def test_two_hundred_trials_in_flight_each_recorded_once(tmp_path: Path) -> None:
    task = tmp_path / "tasks" / "sleepy"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(
        '[agent]\ntimeout_sec = 600\n[verifier]\ntimeout_sec = 60\nisolation = "container"\n'
    )
    (task / "instruction.md").write_text("Sleep.\n")
    (task / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    n = 200
    config = RunConfig(
        tasks_dir=str(tmp_path / "tasks"), agent="cmd", agent_options={"command": "sleep 2"}, attempts=n,
        concurrency=n, runs_dir=str(tmp_path / "runs"), retries=0, stop_after_errors=0,
    )  # fmt: skip
    backend = FakeSleepBackend()
    ledger = Ledger(str(tmp_path / "ledger.db"))
    tally, _ = start_run(ledger, "fake", config, executor=LocalExecutor(backend))  # type: ignore[arg-type]
    assert tally.done == n
    run = ledger.get_run("fake")
    rows = list(ledger.trial_rows(run.id))
    assert sorted(r.attempt for r in rows) == list(range(n))  # each once: nothing lost, nothing doubled
    assert backend.peak >= n  # every trial's box alive at once (a verifier's fresh one may join them)
    assert backend.live() == 0  # and every one removed
    assert run.stack["engine"] == "fake-sleep"
    assert all((r.extra or {}).get("phase_s", {}).get("agent_execution", 0) >= 2.0 for r in rows)
    assert len(list((tmp_path / "runs" / "fake").iterdir())) >= n  # a folder per trial

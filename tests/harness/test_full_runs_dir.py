"""A full --runs-dir loses no trial: each is in the ledger before its folder is written, and a failed
folder write is a warning on the trial (extra.warnings), not the end of the run."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASKS = "plain-bugfix,proxy-env,flaky-p2p,uncommitted-test-config"


@pytest.fixture
def full_dir(tmp_path):
    """A 256 KiB tmpfs, filled up (mounting needs root, as the Docker tests' CI has)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.fail("this test mounts a tiny tmpfs: run it as root (the Docker test job does)")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        (mount / "runs" / "full").mkdir(parents=True)
        (mount / "runs" / "full" / ".lock").write_text("")
        with contextlib.suppress(OSError), (mount / "filler").open("wb") as fh:
            while True:
                fh.write(b"x" * 4096)
                fh.flush()
        with pytest.raises(OSError):
            (mount / "probe").write_text("x" * 8192)
        yield mount / "runs"
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_full_runs_dir_loses_no_trial(engine, full_dir, cli, db):
    res = cli("run", str(EXAMPLES), "--agent", "nop", "--run", "full", "--tasks", TASKS, "--concurrency", "2",
              "--runs-dir", str(full_dir))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert "4 trials recorded" in res.stderr and "4 trial folder(s) not written" in res.stderr
    ledger = Ledger(db)
    got = trial_dicts(ledger, "full")
    assert sorted(t["task_id"] for t in got) == sorted(TASKS.split(","))
    for t in got:
        assert t["outcome"] in ("unresolved", "resolved"), t
        assert any("No space left on device" in w for w in t["extra"]["warnings"]), t["extra"]

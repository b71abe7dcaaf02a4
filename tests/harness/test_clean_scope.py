"""`trialbook clean` is scoped to one ledger's runs: a colleague's running trials on the same host survive it."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
from pathlib import Path

import docker
import pytest

from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]
BASE = "trialbook-base:bookworm"


@pytest.fixture
def engine():
    return docker.from_env()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "TRIALBOOK_DB"}


def _alive(engine, cid: str) -> bool:
    try:
        return engine.api.inspect_container(cid)["State"]["Running"]
    except docker.errors.NotFound:
        return False


def test_clean_without_options_leaves_another_ledgers_running_container(engine, tmp_path: Path) -> None:
    mine_dir, theirs_dir = tmp_path / "me", tmp_path / "colleague"
    mine_dir.mkdir()
    theirs_dir.mkdir()
    mine_id = Ledger(str(mine_dir / "trialbook.db")).id
    theirs_id = Ledger(str(theirs_dir / "trialbook.db")).id
    boxes = []
    try:
        for ledger in (mine_id, theirs_id):  # the same run name in both ledgers
            labels = {"trialbook.run": "ckpt-eval", "trialbook.ledger": ledger}
            boxes.append(engine.containers.run(BASE, ["sleep", "120"], detach=True, labels=labels).id)
        mine, theirs = boxes
        # a terminal attached, answered no: the count is shown, nothing goes
        master, slave = pty.openpty()
        proc = subprocess.Popen(CLI + ["clean"], cwd=mine_dir, env=_env(), stdin=slave,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        os.close(slave)
        os.write(master, b"n\n")
        out, err = proc.communicate(timeout=120)
        os.close(master)
        assert proc.returncode == 1, err
        assert "remove 1 container(s) and 0 image(s) of this ledger's runs? [y/N]" in err
        assert _alive(engine, mine) and _alive(engine, theirs)
        # no terminal (a script): no question; only this ledger's container goes
        res = subprocess.run(CLI + ["clean"], cwd=mine_dir, env=_env(), capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert res.stderr == "removed 1 container(s) and 0 image(s) of this ledger's runs\n"
        assert not _alive(engine, mine)
        assert _alive(engine, theirs)
        # a folder with no ledger: one line naming the way to clean the whole host
        res = subprocess.run(CLI + ["clean"], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, timeout=120)  # fmt: skip
        assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
        assert "no ledger at" in res.stderr and "--all-on-host" in res.stderr
        assert _alive(engine, theirs)
    finally:
        for cid in boxes:
            with contextlib.suppress(docker.errors.NotFound):
                engine.api.remove_container(cid, force=True)

"""The disk quota's measure (sandbox/quota.py `layer_bytes`): the blocks a container's layer takes, read from the host.
(The quota itself, on the real daemon: tests/verify/test_attacks_privilege.py, disk_fill_agent and disk_fill_tests;
a write between two of the watch's looks: below.)"""

from __future__ import annotations

import os
import shutil

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger
from trialbook.sandbox import quota
from trialbook.sandbox.quota import layer_bytes as _layer_bytes


def test_the_measure_counts_blocks_not_links_and_none_once_gone(tmp_path) -> None:
    layer = tmp_path / "diff"
    (layer / "a" / "b").mkdir(parents=True)
    (layer / "a" / "b" / "data").write_bytes(os.urandom(3 << 20))
    (layer / "sparse").open("wb").truncate(1 << 30)  # a gigabyte of holes costs the disk nothing
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(os.urandom(4 << 20))
    (layer / "link").symlink_to(outside)  # not followed
    used = _layer_bytes(str(layer))
    assert used is not None and (3 << 20) <= used < (3 << 20) + (1 << 20)
    assert _layer_bytes(str(tmp_path / "removed")) is None


@pytest.mark.docker
def test_a_write_past_the_quota_between_two_looks_is_charged_when_the_agent_ends(
    engine, cli, db, tmp_path, monkeypatch
) -> None:
    """The watch looks every DISK_POLL_S; on a loaded machine a write can start and end between two looks, and the
    agent be done before the next. One look when the agent's phase ends (Sandbox.look_at_disk) charges it all the
    same: here the watch's second look would come after an hour."""
    monkeypatch.setattr(quota, "DISK_POLL_S", 3600.0)
    task = tmp_path / "tasks" / "fills"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    (task / "solution" / "solve.sh").write_text(
        "#!/bin/bash\nsleep 2\ndd if=/dev/zero of=/var/tmp/fill bs=1M count=96 status=none\n"
    )
    (task / "task.toml").write_text((task / "task.toml").read_text() + "disk_mb = 32\n")
    res = cli("run", str(tmp_path / "tasks"), "--agent", "oracle", "--run", "fill", "--runs-dir", str(tmp_path / "r"))
    assert res.exit_code == 0, res.stderr
    [trial] = trial_dicts(Ledger(db), "fill")
    assert (trial["outcome"], trial["exception"], trial["reward"]) == ("disk_quota", "DiskQuotaError", 0.0), trial

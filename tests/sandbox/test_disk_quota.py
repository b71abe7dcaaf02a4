"""The disk quota's measure (sandbox/quota.py `layer_bytes`): the blocks a container's layer takes, read from the host.
(The quota itself, on the real daemon: tests/verify/test_attacks_privilege.py, disk_fill_agent and disk_fill_tests.)"""

from __future__ import annotations

import os

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

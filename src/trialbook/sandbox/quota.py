"""The disk quota of a sandbox, kept by the harness: the storage driver here (overlay2 on ext4) has no per-container
quota (`--storage-opt size` needs xfs with project quotas), so a thread measures the container's own layer
(`Sandbox.watch_disk`): tests/sandbox/test_disk_quota.py."""

from __future__ import annotations

import os
import time
from typing import Any, Protocol

from docker.errors import APIError, DockerException
from requests.exceptions import RequestException


class Watched(Protocol):
    """What of a sandbox (sandbox/box.Sandbox) the watch reads and sets."""

    engine: Any
    id: str
    removed: bool
    until: float | None
    disk_limit: int
    disk_hit: int

    def kill_processes(self) -> Any: ...


# how often a container's own layer is measured against its disk quota (Sandbox.watch_disk): walking the host folder
# of the layer (overlay2's upper dir, a local daemon), else the daemon's own size of it (a walk of its own: rarer)
DISK_POLL_S = 0.5
DISK_POLL_DAEMON_S = 5.0


def layer_bytes(root: str) -> int | None:
    """Bytes of disk the files below `root` take (their blocks, links not followed); None when `root` is gone."""
    if not os.path.isdir(root):
        return None
    total, stack = 0, [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    total += st.st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return total


def watch(box: Watched, upper: str | None) -> None:
    """Until `box` is removed: past `box.disk_limit`, every process but PID 1 is killed (again at each look while it
    stays past), a phase with a budget (`until`) ends at once, and `box.disk_hit` says so."""
    while not box.removed:
        if look(box, upper) is None:  # the container (its layer) is gone
            return
        time.sleep(DISK_POLL_S if upper else DISK_POLL_DAEMON_S)


def look(box: Watched, upper: str | None) -> int | None:
    """One measurement of `box`'s layer (None: gone); past its limit, `box.disk_hit` set and its processes killed.
    Also asked once when a phase ends (Sandbox.look_at_disk): a write that ended between two of the watch's looks,
    on a loaded machine seconds apart, is charged all the same (tests/verify/test_attacks_privilege.py
    disk_fill_agent)."""
    used = layer_bytes(upper) if upper else daemon_size(box)
    if used is not None and used > box.disk_limit:
        box.disk_hit = max(box.disk_hit, used)
        if box.until is not None:
            box.until = time.monotonic()
        box.kill_processes()
    return used


def daemon_size(box: Watched) -> int | None:
    try:
        return int(box.engine.client.api.inspect_container(box.id, size=True).get("SizeRw") or 0)
    except (APIError, DockerException, RequestException):
        return None

"""What a container's cgroup says about the limits it hit (read on the daemon's host, no daemon call)."""

from __future__ import annotations

from pathlib import Path

_CGROUP_FILES = {  # (counter, file, field) for cgroup v1 (cgroupfs driver) and v2 (systemd or cgroupfs)
    "oom_kills": [
        ("memory/docker/{id}/memory.oom_control", "oom_kill"),
        ("system.slice/docker-{id}.scope/memory.events", "oom_kill"),
        ("docker/{id}/memory.events", "oom_kill"),
    ],
    "pids_limit_hits": [
        ("pids/docker/{id}/pids.events", "max"),
        ("system.slice/docker-{id}.scope/pids.events", "max"),
        ("docker/{id}/pids.events", "max"),
    ],
}


def cgroup_counters(container_id: str, root: Path = Path("/sys/fs/cgroup")) -> tuple[dict[str, int], set[str]]:
    """A container's non-zero limit counters (OOM kills, pids-limit hits) read from its cgroup on this host,
    and which counters could be read at all (none for a remote daemon: Sandbox.limit_hits then asks it)."""
    hits: dict[str, int] = {}
    read: set[str] = set()
    for counter, places in _CGROUP_FILES.items():
        for rel, field in places:
            try:
                text = (root / rel.format(id=container_id)).read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == field and value.strip().isdigit():
                    read.add(counter)  # a kernel without the field leaves it unread: the daemon is asked
                    if int(value):
                        hits[counter] = int(value)
            break
    return hits, read

"""What a container's cgroup says about the limits it hit: read on the daemon's host (no daemon call), or by the
container's last process from inside, where its own cgroup is mounted (the cgroup goes with the container)."""

from __future__ import annotations

from pathlib import Path

_CGROUP_FILES = {  # (counter, file, field): Docker, then Podman; cgroup v1 (cgroupfs) and v2 (systemd or cgroupfs)
    "oom_kills": [
        ("memory/docker/{id}/memory.oom_control", "oom_kill"),
        ("system.slice/docker-{id}.scope/memory.events", "oom_kill"),
        ("docker/{id}/memory.events", "oom_kill"),
        ("memory/libpod_parent/libpod-{id}/memory.oom_control", "oom_kill"),  # Podman (cgroupfs manager)
        ("machine.slice/libpod-{id}.scope/memory.events", "oom_kill"),
        ("libpod_parent/libpod-{id}/memory.events", "oom_kill"),
    ],
    "pids_limit_hits": [
        ("pids/docker/{id}/pids.events", "max"),
        ("system.slice/docker-{id}.scope/pids.events", "max"),
        ("docker/{id}/pids.events", "max"),
        ("pids/libpod_parent/libpod-{id}/pids.events", "max"),
        ("machine.slice/libpod-{id}.scope/pids.events", "max"),
        ("libpod_parent/libpod-{id}/pids.events", "max"),
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


_INSIDE_FILES = {  # the same counters from inside the container: cgroup v1, then v2 (a private cgroup namespace)
    "oom_kills": [
        ("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"),
        ("/sys/fs/cgroup/memory.events", "oom_kill"),
    ],
    "pids_limit_hits": [("/sys/fs/cgroup/pids/pids.events", "max"), ("/sys/fs/cgroup/pids.events", "max")],
}


def report_script() -> str:
    """Shell (builtins only: no tool the code under test could have replaced, no fork) that prints a line
    `COUNTER VALUE` for each limit counter it can read from inside the container."""
    parts = []
    for counter, places in _INSIDE_FILES.items():
        files = " ".join(path for path, _ in places)
        field = places[0][1]
        parts.append(
            f'for f in {files}; do [ -r "$f" ] || continue\n'
            f'  while read -r k v; do [ "$k" = {field} ] && printf \'{counter} %s\\n\' "$v"; done < "$f"; break\n'
            "done\n"
        )
    return "".join(parts)


def parse_report(text: str) -> tuple[dict[str, int], set[str]]:
    """What report_script printed, as cgroup_counters returns it: the non-zero counters, and those read."""
    hits: dict[str, int] = {}
    read: set[str] = set()
    for line in text.splitlines():
        counter, _, value = line.partition(" ")
        if counter in _INSIDE_FILES and value.strip().isdigit():
            read.add(counter)
            if int(value):
                hits[counter] = int(value)
    return hits, read

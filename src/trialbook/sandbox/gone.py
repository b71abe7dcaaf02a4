"""A sandbox that did not start because its network went away, named as the cause: the bridge device deleted from
the host under the daemon (a dockerd started with `--bridge none` deletes docker0 at start-up), or the Docker network
removed. The run's breaker (--stop-after-errors) then stops the run with this line as its cause."""

from __future__ import annotations

import re

# how the daemon words it (libnetwork)
_GONE_BRIDGE = re.compile(r"could not find bridge (\S+?):|bridge (\S+?) (?:not found|does not exist)")
_GONE_NETWORK = re.compile(r"network (\S+) not found")


def start_failure(name: str, exc: Exception) -> tuple[str, bool]:
    """The line for container `name` that did not start with `exc`, and whether a Docker network was removed (the
    unroutable network, trialbook's own, is then made again by the next try)."""
    text = str(exc)
    if m := _GONE_BRIDGE.search(text):
        bridge = m.group(1) or m.group(2)
        return (f"the network bridge {bridge} is gone from this host (removed under the Docker daemon): no sandbox "
                f"with a network starts until it is back (restart the daemon); container {name}", False)  # fmt: skip
    if m := _GONE_NETWORK.search(text):
        return f"the Docker network {m.group(1)} was removed; container {name} did not start", True
    return f"container {name} did not start: {exc}", False

"""The agent's sandbox as a development environment with nothing to spare (docs/threat-model.md): Docker's default
capabilities less the five no development environment needs, no new privileges, and nothing of the host's disk
mounted. Read from a process inside a container started as a trial's are (DockerEngine.start)."""

from __future__ import annotations

import secrets

import pytest

from trialbook.harness.run.stack import connect
from trialbook.sandbox import BoxSpec
from trialbook.sandbox.docker import CAPABILITIES, LABEL_RUN

IMAGE = "trialbook-base:bookworm"
# capability numbers (linux/capability.h) of the names sandbox/docker.py keeps
NUMBERS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "FSETID": 4, "KILL": 5, "SETGID": 6, "SETUID": 7, "SETPCAP": 8,
           "NET_BIND_SERVICE": 10}  # fmt: skip
# what a container may have mounted: its own overlay root, the kernel's file systems, Docker's tmpfs and its per-
# container files (hostname, hosts, resolv.conf: bind mounts of the container's own folder)
OWN = {"overlay", "proc", "tmpfs", "devpts", "mqueue", "sysfs", "cgroup", "cgroup2", "shm"}


@pytest.fixture(scope="module")
def box(engine):
    tb = connect()
    run = f"w40b-hardening-{secrets.token_hex(3)}"
    started = tb.start(
        BoxSpec(IMAGE, {LABEL_RUN: run}, cpus=0.5, memory_mb=128, pids_limit=64, network=False), f"tb-{run}"
    )
    yield started
    started.remove()
    tb.clean(run)


def test_the_agent_container_has_no_spare_capabilities_and_no_new_privileges(box):
    status = box.exec(["cat", "/proc/self/status"], timeout=30).output
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    kept = sum(1 << NUMBERS[name] for name in CAPABILITIES)
    assert int(fields["CapBnd"], 16) == kept and int(fields["CapEff"], 16) == kept
    assert fields["NoNewPrivs"].strip() == "1"
    # a capability dropped: no device node can be made, root or not
    mknod = box.exec(["mknod", "/tmp/null2", "c", "1", "3"], timeout=30)
    assert mknod.exit_code != 0 and "Operation not permitted" in mknod.output


def test_no_host_folder_is_mounted(box):
    mounts = [line.split() for line in box.exec(["cat", "/proc/self/mounts"], timeout=30).output.splitlines()]
    # (Docker masks /proc/keys, /proc/timer_list and others by mounting /dev/null or an empty tmpfs over them)
    binds = {m[1] for m in mounts if m[2] not in OWN and not m[1].startswith(("/proc/", "/sys/"))}
    # Docker's own files of the container, bind-mounted from its folder (none when it has no network: the harness
    # writes /etc/hosts itself); nothing else of the host
    assert binds <= {"/etc/hostname", "/etc/hosts", "/etc/resolv.conf"}, binds

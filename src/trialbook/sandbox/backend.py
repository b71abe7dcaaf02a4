"""The sandbox backend seam: what a trial, its agent and its verifier ask of wherever sandboxes run.

A backend (`Backend`) resolves a task's image, starts sandboxes (`Box`) from it with limits and labels, and removes
whatever a run left (`clean`, by label). Docker (sandbox/docker.py) and Podman (sandbox/podman.py) implement all of
it; a cloud backend is one module that subclasses `BoxBase`, which derives everything but six calls (exec,
put_tar, export, kill, remove, running) from them, and says in `Capabilities` what it cannot do. The registry
(`BACKENDS`) maps a name (`trialbook run --backend NAME`) to the module and class that implement it, imported
only when asked for. docs/contributing/backends.md says what a backend must guarantee for the verifier.
"""

from __future__ import annotations

import importlib
import io
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

from trialbook.capped import Sink
from trialbook.outcomes import ErrorKind
from trialbook.sandbox.box import SHELL_SETUP_PATH, DaemonError, ExecResult, SandboxError, tar_bytes, tar_text
from trialbook.sandbox.cgroup import parse_report, report_script


class Unsupported(SandboxError):
    """A backend was asked for what its Capabilities say it cannot do (an infrastructure error: never a grade)."""

    kind = ErrorKind.DAEMON


# A sandbox's network (task.toml [environment]): no network stack at all (the default), the internet
# (allow_network), or UNROUTABLE (unroutable_network): one interface on which every address past the sandbox, the
# host's included, is unroutable, so that a connect waits for its timeout, as to an address the internet drops
# (test suites time connects out against 10.255.255.1), where with no network it fails at once
NO_NETWORK, INTERNET, UNROUTABLE = "none", "internet", "unroutable"


def network_mode(network: bool | str) -> str:
    """The network a sandbox starts with: False is NO_NETWORK, True INTERNET, else the mode named."""
    if isinstance(network, bool):
        return INTERNET if network else NO_NETWORK
    if network not in (NO_NETWORK, INTERNET, UNROUTABLE):
        raise ValueError(f"unknown network mode {network!r}")
    return network


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the six calls every one has. The harness asks before it relies on one."""

    network_off: bool = True  # a sandbox starts with no network at all (a task without allow_network requires it)
    unroutable_network: bool = False  # network_mode UNROUTABLE: an interface whose every address past it is unroutable
    limits: frozenset[str] = frozenset({"cpus", "memory_mb", "pids_limit"})  # limits it enforces
    layer_changes: bool = True  # changes(): the backend's own listing of what differs from the image
    host_layer: bool = False  # upper_dir(): the sandbox's writable layer is a folder on this host
    warm_pool: bool = False  # open_pool(): sandboxes started ahead of the trials that take them
    runtimes: bool = False  # runtime_for(): an OCI runtime chosen per run
    restart: bool = True  # restart(): every process killed and the sandbox started again, its files kept
    local: bool = True  # sandboxes run on this machine (the driver can read their cgroups)
    notes: tuple[str, ...] = field(default_factory=tuple)


Prepare = tuple[str, Callable[[Any], Any]]  # (what, fn): fn(box) runs on a warm sandbox of that kind while it waits
Mount = tuple[str, str, bool]  # (host path, sandbox path, read-only)


@dataclass(frozen=True)
class BoxSpec:
    """What a sandbox starts with, all but its name: a task's image, limits, network and environment
    (harness/trial/execution.py
    box_spec), the run's labels. `Backend.start(spec, name)` starts one; `Backend.ahead(spec)` warms one for later.
    `prepare`: warm sandboxes of this kind are a spec apart, and fn(box) ran on each while it waited (its result is
    box.prepared; a cold one is not prepared). `runtime`: Backend.runtime_for. `mounts`: bound into the sandbox (an
    installed agent's binary, the socket of its model gateway: rl/cli_agents.py); such a sandbox is never warm."""

    image: str
    labels: dict[str, str]
    cpus: float
    memory_mb: int
    pids_limit: int
    network: bool | str = False  # network_mode
    env: dict[str, str] | None = None
    workdir: str | None = None
    shell_setup: str | None = None  # written to SHELL_SETUP_PATH and named by BASH_ENV: every `bash` starts in it
    prepare: Prepare | None = None
    runtime: str = "auto"
    mounts: tuple[Mount, ...] = ()


@runtime_checkable
class Box(Protocol):
    """One running sandbox, as a trial, its agent and its verifier use it."""

    name: str
    id: str
    stop: threading.Event  # set from outside (a deadline): a running exec is killed and reported timed out
    until: float | None  # a phase's budget (monotonic time) no exec may run past
    prepared: Any  # what a warm sandbox's `prepare` step returned (None: cold)
    runtime: str | None
    disk_hit: int
    disk_limit: int
    removed: bool
    channel: Any  # a command channel (sandbox/channel.py) or None: the verifier's run is then a trusted exec
    attempt: int | None  # the trial's attempt, on the agent's box (an agent's per-attempt seed derives from it)

    def exec(
        self, cmd: list[str], timeout: float, env: dict[str, str] | None = None, workdir: str | None = None,
        user: str = "", sink: Sink | None = None, trusted: bool = False,
    ) -> ExecResult: ...  # fmt: skip

    def run_script(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult: ...
    def finish(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult | None: ...
    def put_tar(self, dest: str, archive: IO[bytes] | bytes) -> None: ...
    def put_dir(self, local: Path, dest: str) -> None: ...
    def write_shell_setup(self, text: str) -> None: ...
    def inline_unpack(self, archive: IO[bytes] | bytes, dest: str = "/") -> str | None: ...
    def read_file(self, path: str) -> bytes | None: ...
    def export(self, path: str, sink: Sink) -> None: ...
    def snapshot(self, path: str, sink: Sink, timeout: float = 600.0) -> bool: ...
    def changes(self) -> dict[str, str]: ...
    def upper_dir(self) -> str | None: ...
    def watch_disk(self, limit: int) -> None: ...
    def look_at_disk(self) -> int: ...
    def limit_hits(self) -> dict[str, int]: ...
    def limits_script(self) -> str: ...  # shell printing the limit counters from inside, for report_limits
    def report_limits(self, text: str) -> None: ...
    def kill_processes(self) -> None: ...
    def kill(self) -> None: ...
    def restart(self) -> None: ...
    def running(self) -> bool: ...
    def remove(self) -> None: ...


class Pool(Protocol):
    """A warm pool as harness/run/execute.py drives it (sandbox/warm.py's WarmPool)."""

    def plan(self, demand: dict[tuple[str, str], int]) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """Where a run's sandboxes start: one daemon, one Podman, one cloud account."""

    name: str  # its registry name, recorded in the run's stack
    capabilities: Capabilities
    warm: Any  # the open warm pool, else None

    def version(self) -> str: ...

    def ensure_image(
        self, key: str, image: str | None, context: Path, env_hash: str, run: str, network: bool,
        labels: dict[str, str] | None = None,
    ) -> tuple[str, str]: ...  # fmt: skip

    def image_workdir(self, ref: str) -> str | None: ...
    def image_id(self, ref: str) -> str | None: ...

    def start(self, spec: BoxSpec, name: str, stop: threading.Event | None = None) -> Box: ...
    def ahead(self, spec: BoxSpec) -> None: ...

    def open_pool(self, concurrency: int) -> Pool: ...
    def close_pool(self) -> None: ...
    def runtime_for(self, wanted: str) -> str | None: ...
    def clean(self, run: str | None = None, images: bool = True, ledger: str | None = None) -> tuple[int, int]: ...


class NoPool:
    """open_pool's answer where a backend keeps nothing warm."""

    def plan(self, demand: dict[tuple[str, str], int]) -> None:
        return None


class BoxBase:
    """Everything of `Box` derived from six calls a backend writes: exec, put_tar, export, kill, remove, running.
    The derived calls take the slow, always-correct way (an exec per script, a copy per file); Docker's Sandbox
    overrides them all with its command channel."""

    def __init__(self, name: str, box_id: str, stop: threading.Event | None = None) -> None:
        self.name, self.id = name, box_id
        self.stop = stop or threading.Event()
        self.until: float | None = None
        self.prepared: Any = None
        self.runtime: str | None = None
        self.disk_hit = 0
        self.disk_limit = 0
        self.removed = False
        self.channel: Any = None  # no command channel: the verifier runs as a trusted exec
        self.attempt: int | None = None
        self.reported: tuple[dict[str, int], set[str]] | None = None

    # the six calls a backend implements
    def exec(
        self, cmd: list[str], timeout: float, env: dict[str, str] | None = None, workdir: str | None = None,
        user: str = "", sink: Sink | None = None, trusted: bool = False,
    ) -> ExecResult:  # fmt: skip
        raise NotImplementedError

    def put_tar(self, dest: str, archive: IO[bytes] | bytes) -> None:
        raise NotImplementedError

    def export(self, path: str, sink: Sink) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def remove(self) -> None:
        raise NotImplementedError

    def running(self) -> bool:
        raise NotImplementedError

    # derived
    def run_script(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult:
        return self.exec(["sh", "-c", script], timeout, user="root", sink=sink)

    def finish(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult | None:
        return None  # no channel: the verifier's run is a trusted exec (verify/runner.py)

    def put_dir(self, local: Path, dest: str) -> None:
        self.put_tar("/", tar_bytes(local, dest.strip("/")))

    def write_shell_setup(self, text: str) -> None:
        self.put_tar("/", tar_text(SHELL_SETUP_PATH.lstrip("/"), text + "\n"))

    def inline_unpack(self, archive: IO[bytes] | bytes, dest: str = "/") -> str | None:
        return None  # the caller copies with put_tar

    def read_file(self, path: str) -> bytes | None:
        buf = io.BytesIO()
        try:
            self.export(path, buf)
        except DaemonError:
            return None
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            f = tar.extractfile(member)
            return f.read() if f else None

    def snapshot(self, path: str, sink: Sink, timeout: float = 600.0) -> bool:
        return False  # the caller kills the sandbox and exports: the backend's copy, not the container's tar

    def changes(self) -> dict[str, str]:
        raise Unsupported(f"{type(self).__name__} cannot list what changed in {self.name} (Capabilities.layer_changes)")

    def upper_dir(self) -> str | None:
        return None

    def watch_disk(self, limit: int) -> None:
        self.disk_limit = limit

    def look_at_disk(self) -> int:
        return self.disk_hit

    def limit_hits(self) -> dict[str, int]:
        return dict(self.reported[0]) if self.reported else {}

    def limits_script(self) -> str:
        return report_script()

    def report_limits(self, text: str) -> None:
        self.reported = parse_report(text)

    def kill_processes(self) -> None:
        self.exec(["sh", "-c", "kill -9 -1"], 30, user="root", trusted=True)

    def restart(self) -> None:
        raise Unsupported(f"{type(self).__name__} cannot restart {self.name} (Capabilities.restart)")


# name -> (module, class, what it is). Imported on use: a run on Docker never imports a cloud SDK.
BACKENDS: dict[str, tuple[str, str, str]] = {
    "docker": ("trialbook.sandbox.docker", "DockerEngine", "a Docker Engine (DOCKER_HOST or its local socket)"),
    "podman": ("trialbook.sandbox.podman", "PodmanEngine", "Podman, daemonless (its API service, started on demand)"),
    "fake-sleep": ("trialbook.sandbox.fake", "FakeSleepBackend", "FAKE: no sandbox, `sleep N` sleeps (bench_scale.py)"),
}  # fmt: skip
RUN_BACKENDS = ("docker", "podman")  # the ones `trialbook run --backend` offers (the fake is for benchmarks)


class UnknownBackend(ValueError):
    pass


def backend_class(name: str) -> type[Any]:
    """The class registered as `name`; an unknown name is one clear line (UnknownBackend)."""
    if name not in BACKENDS:
        raise UnknownBackend(f"unknown sandbox backend {name!r}; known: {', '.join(BACKENDS)}")
    module, cls, _ = BACKENDS[name]
    return getattr(importlib.import_module(module), cls)  # type: ignore[no-any-return]


def make_backend(name: str, **kwargs: Any) -> Backend:
    """A connected backend of the registered `name` (DaemonError when it does not answer)."""
    return backend_class(name)(**kwargs)  # type: ignore[no-any-return]

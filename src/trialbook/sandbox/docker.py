"""Trial sandboxes on a real Docker Engine through the docker SDK: images, the container lifecycle, `clean`.

Every container's PID 1 is the command channel's server (sandbox/channel.py), or `sleep infinity` in a
container allowed fewer than CHANNEL_MIN_PIDS processes; the agent's commands and the harness's run through
the channel (as execs when this client could not attach to it), so a timed-out command can be stopped with
`kill -9 -1` (everything but PID 1) and the container kept for the next phase. The verifier's run in a fresh
container is its last process (PID 1 itself, Sandbox.finish), elsewhere an exec.
Containers and built images carry `trialbook.*` labels so `clean` and `resume` find every leftover.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound, NotFound
from docker.transport.unixconn import UnixHTTPAdapter, UnixHTTPConnectionPool
from requests.exceptions import RequestException

from trialbook.sandbox.backend import (
    INTERNET,
    NO_NETWORK,
    UNROUTABLE,
    BoxSpec,
    Capabilities,
    Prepare,
    Unsupported,
    network_mode,
)
from trialbook.sandbox.box import (
    SHELL_SETUP_PATH,
    ContainerStartError,
    DaemonError,
    ImageBuildError,
    RuntimeUnknownError,
    Sandbox,
    tar_files,
)
from trialbook.sandbox.channel import SERVER, TOOLS_FOUND, Channel, ChannelBroken, start_up
from trialbook.sandbox.gone import start_failure
from trialbook.sandbox.warm import LABEL_POOL, Spec, WarmPool

LABEL_RUN = "trialbook.run"
LABEL_TRIAL = "trialbook.trial"
LABEL_TASK = "trialbook.task"
LABEL_LEDGER = "trialbook.ledger"  # the ledger's id: runs of the same name in two ledgers never meet
LABEL_RUN_ID = "trialbook.run_id"
# A container without network gets no network stack from Docker at all (NetworkDisabled: no libnetwork
# sandbox, no prestart hook re-executing dockerd; ~45% of a container's start-to-removal CPU,
# benchmarks/bench_harness.py --cpu), just the empty namespace runc makes with its loopback up; Docker then
# writes no /etc/hosts, so the harness writes this one (what Docker writes for --network none).
CHANNEL_MIN_PIDS = 8
# The network of UNROUTABLE containers (sandbox/backend.py), made once per daemon: `internal` (no route out, no
# NAT), no IPv4 address of the host's on its bridge (inhibit_ipv4: the containers' gateway never answers, so a
# connect to any address past the container waits for its timeout, and no service of the host is reachable), no
# traffic between two containers on it (enable_icc=false), and no IPv6 in them (no link-local path to the host).
UNROUTABLE_NETWORK = "trialbook-unroutable"
UNROUTABLE_OPTIONS = {"com.docker.network.bridge.inhibit_ipv4": "true", "com.docker.network.bridge.enable_icc": "false"}
UNROUTABLE_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
EXIT_WAIT_S = 2.0  # how long a removal waits for a container whose channel ended to stop by itself
LOOPBACK_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
# The OCI runtime `auto` picks when the daemon has it registered (scripts/docker-up.sh registers it): crun, in C,
# starts and deletes a container for ~0.03 CPU s less than runc, whose every step is a Go binary started afresh
# (~22% of a container's lifecycle here, README: The OCI runtime). Same OCI spec from dockerd, same kernel
# isolation: namespaces, seccomp, capabilities, cgroup limits. A host where it cannot start containers (cgroups in
# hybrid mode with controllers left on the v2 side) falls back to the daemon's default after the first refusal.
AUTO_RUNTIME = "crun"
# The capabilities a container keeps of Docker's default 14 (every other is dropped): what a development environment
# and a verifier need as root: own and change any file (CHOWN, DAC_OVERRIDE, FOWNER, FSETID), switch users
# (SETUID, SETGID: apt's sandbox user, the verifier's unprivileged test command, verify/privilege.py), lower its own
# bounding set (SETPCAP: `setpriv --bounding-set=-all` for that command), signal its processes (KILL) and bind a low
# port (NET_BIND_SERVICE). Dropped: MKNOD (device nodes), NET_RAW (raw sockets), SETFCAP (file capabilities),
# SYS_CHROOT, AUDIT_WRITE. With no-new-privileges no setuid binary or file capability raises a process's privileges.
CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SETUID", "SETGID", "SETPCAP", "KILL", "NET_BIND_SERVICE")
SECURITY_OPT = ("no-new-privileges",)


def docker_help() -> str:
    return (
        "No Docker daemon answers on this machine. trialbook runs every trial in a Docker container, so it "
        "needs a running Docker Engine: on Debian/Ubuntu run `bash scripts/docker-up.sh` from the trialbook "
        "checkout as root (it installs docker.io and debootstrap, starts dockerd in the background and builds "
        "the base image trialbook-base:bookworm without any registry), or install Docker Engine yourself "
        "(https://docs.docker.com/engine/install/), start it, make sure `docker info` works for your user "
        "(or set DOCKER_HOST), then run this command again."
    )


def slug(text: str, limit: int = 40) -> str:
    """A Docker-name-safe fragment: [a-zA-Z0-9_.-], no leading punctuation."""
    clean = re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.") or "x"
    return clean[:limit]


# The calls of a container's lifecycle: a plain request and its answer, never a connection the daemon takes over
# (attach, exec start), which must not go back to a shared pool
_PLAIN_CALL = re.compile(r"/containers/(create|[^/]+(/(start|json|wait|kill|stop))?)\Z")
SHARED_POOL_SIZE = 64  # connections kept alive to the daemon (beyond it one is opened and closed per call)


class SharedPoolAdapter(UnixHTTPAdapter):
    """docker-py keys a local socket's connection pools by the whole URL (docker/transport/unixconn.py), so every
    container's calls open connections of their own: ~0.2 ms of the client's CPU and ~0.15 ms of the daemon's a
    call more than a kept-alive one (ten calls a trial). Here the plain calls of a container's lifecycle share one
    pool; every other call keeps docker-py's own."""

    def __init__(self, socket_path: str, timeout: float, max_pool_size: int) -> None:
        super().__init__(f"http+unix://{socket_path}", timeout, max_pool_size=max_pool_size)
        self.shared = UnixHTTPConnectionPool("localhost", socket_path, timeout, maxsize=SHARED_POOL_SIZE)

    def get_connection(self, url: str, proxies: Any = None) -> Any:
        if _PLAIN_CALL.search(urlsplit(url).path):
            return self.shared
        return super().get_connection(url, proxies)

    def close(self) -> None:
        super().close()
        self.shared.close()

    @classmethod
    def install(cls, api: Any) -> None:
        """Put one in place of `api`'s adapter when `api` speaks to a local socket (else leave it as it is)."""
        old = api.get_adapter("http+docker://localhost")
        if type(old) is UnixHTTPAdapter:
            api.mount("http+docker://", cls(old.socket_path, old.timeout, old.max_pool_size))
            old.close()


class DockerEngine:
    """The daemon connection, image builds and container lifecycle (sandbox/backend.py's Backend, named "docker")."""

    name = "docker"
    capabilities = Capabilities(host_layer=True, warm_pool=True, runtimes=True, unroutable_network=True)
    host_config_extra: tuple[tuple[str, Any], ...] = ()  # more of a container's host config (podman.py: ulimits)

    def __init__(self, pool: int = 10, url: str | None = None) -> None:
        """`url`: the daemon's address (unix:///path, tcp://host:port); None: DOCKER_HOST or the local socket."""
        self.url = url
        try:
            if url is None:
                self.client = docker.from_env(timeout=120, max_pool_size=pool)
            else:
                self.client = docker.DockerClient(base_url=url, timeout=120, max_pool_size=pool)
            if self.client.api.base_url.startswith("http+docker://"):
                # no proxy on a local socket: else requests reads the environment's proxy variables on every
                # call to the daemon (~1.5 ms of CPU each, ~18 calls a trial; benchmarks/bench_harness.py --cpu)
                self.client.api.trust_env = False
                SharedPoolAdapter.install(self.client.api)
            self.client.ping()
        except DockerException as exc:
            raise DaemonError(f"no Docker daemon: {exc}") from None
        self._build_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self.warm: WarmPool | None = None
        self.pool_stats: dict[str, int] = {}  # the last closed pool's counts (taken, cold, created, ...)
        self.prepare_ahead = True  # open_pool: whether warm containers run their `prepare` step (see there)
        self._image_ids: dict[str, str] = {}  # built tags seen this run: no image inspect per trial
        self._configs: dict[str, tuple[str | None, bool]] = {}
        self._channels: dict[str, Channel] = {}  # container id -> its command channel
        self._info: dict[str, Any] | None = None  # `docker info`, asked once (DockerEngine.info)
        self._runtime_of: dict[str, str] = {}  # container id -> the runtime it was created with (Sandbox.runtime)
        self._auto_refused = False  # AUTO_RUNTIME could not start a container here: `auto` is the default since
        self.channels = True  # whether new containers get one (benchmarks compare without)
        self._unroutable_checked = False  # UNROUTABLE_NETWORK found as it should be (_unroutable_network)

    def open_pool(self, concurrency: int) -> WarmPool:
        """Start keeping containers warm (sandbox/warm.py) until close_pool()."""
        try:
            info = self.info()
        except DaemonError:
            info = {}
        host_mb = int(info.get("MemTotal", 0)) // 2**20 or None
        # A warm container's preparation is one more command (its git work; without a channel also an exec, ~0.06
        # CPU s, benchmarks/bench_harness.py --cpu); with a core to spare it is off the trials' path, but when the
        # trials keep every core busy it competes with them, and the trial's own apply does the same work.
        self.prepare_ahead = concurrency < int(info.get("NCPU") or 0)
        self.warm = WarmPool(
            create=lambda spec, name: self._create(spec, name, {**dict(spec.labels), LABEL_POOL: "1"}),
            remove=self._remove_container,
            depth=concurrency + 1,  # per spec: the agent's and the verifier's are specs apart
            limit=2 * concurrency + 2,
            memory_mb=host_mb,
            # creations and removals run side by side with the trials (2 workers fell behind 4 trials);
            # with them the trials' threads stay within the client's 10 connections
            workers=concurrency + 1,
        )
        return self.warm

    def _remove_container(self, container_id: str) -> None:
        """The warm pool's removal (off the trials' path): a container whose channel ends stops by itself, and is
        removed once stopped; a kill is left for one that did not stop within EXIT_WAIT_S."""
        channel = self._channels.get(container_id)
        self.forget(container_id)
        if channel is not None:
            with contextlib.suppress(APIError, DockerException, RequestException):
                self.client.api.wait(container_id, timeout=EXIT_WAIT_S)
        self.remove_container(container_id)

    def remove_container(self, container_id: str) -> None:
        """Remove a container, running or not (sandbox/podman.py waits for one that is stopping)."""
        self.client.api.remove_container(container_id, force=True)

    def flush_pool(self) -> None:
        """The warm containers dropped (the daemon restarted under them: sandbox/warm.WarmPool.flush)."""
        if self.warm is not None:
            self.warm.flush()

    def close_pool(self) -> None:
        warm, self.warm = self.warm, None
        if warm is not None:
            warm.close()
            self.pool_stats = dict(warm.stats)

    def version(self) -> str:
        return str(self.client.version().get("Version"))

    def info(self) -> dict[str, Any]:
        """`docker info`, asked once per engine: what this uses of it (the daemon's id, cores, memory, runtimes) stays
        as it is while the daemon runs."""
        if self._info is None:
            try:
                self._info = dict(self.client.info())
            except (APIError, DockerException) as exc:
                raise DaemonError(f"cannot reach the Docker daemon: {exc}") from None
        return self._info

    def runtimes(self) -> list[str]:
        """The OCI runtimes the daemon has registered."""
        return sorted(self.info().get("Runtimes") or {})

    def runtime_for(self, wanted: str) -> str | None:
        """The runtime a container asked for with `wanted` gets: a name, or None for the daemon's default. `wanted`:
        "auto" (AUTO_RUNTIME when the daemon has it, else its default), "default", or a runtime the daemon names;
        a name the daemon does not have is a RuntimeUnknownError."""
        if wanted == "default":
            return None
        if wanted == "auto":
            return AUTO_RUNTIME if not self._auto_refused and AUTO_RUNTIME in self.runtimes() else None
        if wanted not in self.runtimes():
            have = ", ".join(self.runtimes()) or "none"
            raise RuntimeUnknownError(
                f"the Docker daemon has no runtime {wanted!r} (it has: {have}); use auto or default"
            )
        return wanted

    def image_workdir(self, ref: str) -> str | None:
        """The image's WORKDIR (None when it has none)."""
        return self._image_config(ref)[0]

    def _image_config(self, ref: str) -> tuple[str | None, bool]:
        """(WORKDIR or None, whether its containers run as root), one inspect per image and run."""
        if ref not in self._configs:
            try:
                config = self.client.api.inspect_image(ref).get("Config") or {}
            except (APIError, DockerException) as exc:
                raise DaemonError(f"image inspect {ref} failed: {exc}") from None
            user = str(config.get("User") or "").split(":")[0]
            self._configs[ref] = (config.get("WorkingDir") or None, user in ("", "root", "0"))
        return self._configs[ref]

    def image_id(self, ref: str) -> str | None:
        try:
            return str(self.client.images.get(ref).id)
        except ImageNotFound:
            return None
        except (APIError, DockerException) as exc:
            raise DaemonError(f"image lookup {ref} failed: {exc}") from None

    def _lock_for(self, ref: str) -> threading.Lock:
        """One build or pull of `ref` at a time: the trials that need it meanwhile wait for it."""
        with self._locks_lock:
            return self._build_locks.setdefault(ref, threading.Lock())

    def _pull(self, image: str) -> str:
        try:
            return str(self.client.images.pull(image).id)
        except (APIError, DockerException) as exc:
            why = str(getattr(exc, "explanation", None) or exc).strip().splitlines()
            raise ImageBuildError(
                f"image {image} is not on the daemon and could not be pulled: {why[0] if why else type(exc).__name__}"
            ) from None

    def ensure_image(
        self,
        key: str,
        image: str | None,
        context: Path,
        env_hash: str,
        run: str,
        network: bool,
        labels: dict[str, str] | None = None,
    ) -> tuple[str, str]:
        """(reference, image id) of a task's image: a named image as the daemon has it, else pulled once; else
        the Dockerfile built once (a content-hash tag)."""
        if image is not None:
            with self._lock_for(image):
                return image, self.image_id(image) or self._pull(image)
        tag = f"tb-{slug(key).lower()}:{env_hash[:12]}"
        with self._lock_for(tag):
            found = self._image_ids.get(tag) or self.image_id(tag)
            if found is not None:
                self._image_ids[tag] = found
                return tag, found
            try:
                built, _ = self.client.images.build(
                    path=str(context),
                    tag=tag,
                    rm=True,
                    forcerm=True,
                    network_mode=None if network else "none",
                    labels={**(labels or {}), LABEL_RUN: run, LABEL_TASK: key},
                )
            except BuildError as exc:
                last = next((str(x.get("error") or x.get("stream")) for x in reversed(list(exc.build_log))), "")
                raise ImageBuildError(f"image build failed for {key}: {exc.msg or last}".strip()) from None
            except (APIError, DockerException) as exc:
                raise ImageBuildError(f"image build failed for {key}: {exc}") from None
            self._image_ids[tag] = str(built.id)
            return tag, str(built.id)

    def start(self, spec: BoxSpec, name: str, stop: threading.Event | None = None) -> Sandbox:
        """A running container of `spec` (sandbox/backend.py BoxSpec says what each field does). With a warm pool
        open, a waiting container of the same spec is taken when there is one; a cold container, or any container
        while `prepare_ahead` is off, is not prepared (box.prepared is None)."""
        made = self._spec(spec)
        # a container with mounts is one trial's own (its agent's socket folder): never from, nor refilled by, the pool
        got = self.warm.take(made, self._hook(spec.prepare)) if self.warm is not None and not made.mounts else None
        if got is not None:
            box = self._box(got.id, got.name, stop)
            box.prepared = got.prepared
            return box
        return self._box(self._create(made, name, spec.labels), name, stop)

    def ahead(self, spec: BoxSpec) -> None:
        """With a warm pool open: start warming containers that start() will be asked for later (a trial's
        verifier containers, while its agent works)."""
        if self.warm is not None:
            self.warm.expect(self._spec(spec), self._hook(spec.prepare))

    @staticmethod
    def _spec(spec: BoxSpec) -> Spec:
        """The pool's key of a BoxSpec: equal keys give equal containers (the trial's own label left out)."""
        return Spec(
            spec.image, spec.cpus, spec.memory_mb, spec.pids_limit, network_mode(spec.network),
            tuple(sorted((spec.env or {}).items())), spec.workdir, spec.shell_setup,
            tuple(sorted((k, v) for k, v in spec.labels.items() if k != LABEL_TRIAL)),
            spec.prepare[0] if spec.prepare else "", spec.runtime, tuple(spec.mounts),
        )  # fmt: skip

    def _hook(self, prepare: Prepare | None) -> Callable[[str, str], Any] | None:
        if prepare is None or not self.prepare_ahead:  # then the spec's containers wait unprepared
            return None
        fn = prepare[1]
        return lambda cid, name: fn(self._box(cid, name))

    def _box(self, cid: str, name: str, stop: threading.Event | None = None) -> Sandbox:
        box = Sandbox(self, self.client.containers.prepare_model({"Id": cid, "Name": name}), stop)
        box.channel = self._channels.get(cid)
        box.runtime = self._runtime_of.get(cid)
        return box

    def forget(self, container_id: str) -> None:
        """Close a container's channel (it is being killed or removed)."""
        self._runtime_of.pop(container_id, None)
        channel = self._channels.pop(container_id, None)
        if channel is not None:
            channel.close()

    def _create(self, spec: Spec, name: str, labels: dict[str, str]) -> str:
        """Create and start a container of `spec` (with its command channel when this client can attach); its id.
        When AUTO_RUNTIME, picked by `auto`, cannot start it, `auto` means the daemon's default from then on."""
        runtime = self.runtime_for(spec.runtime)
        try:
            return self._create_with(spec, runtime, name, labels)
        except ContainerStartError as exc:
            if spec.runtime != "auto" or runtime is None or "OCI runtime" not in str(exc):
                raise
            self._auto_refused = True
            return self._create_with(spec, None, name, labels)

    def _create_with(self, spec: Spec, runtime: str | None, name: str, labels: dict[str, str]) -> str:
        api = self.client.api
        env = dict(spec.env)
        if spec.shell_setup:
            env["BASH_ENV"] = SHELL_SETUP_PATH
        mode = network_mode(spec.network)
        binds = {h: {"bind": c, "mode": "ro" if ro else "rw"} for h, c, ro in spec.mounts}
        host = api.create_host_config(
            binds=binds or None,
            network_mode={NO_NETWORK: "none", INTERNET: "bridge"}.get(mode) or self._unroutable_network(),
            sysctls=UNROUTABLE_SYSCTLS if mode == UNROUTABLE else None,
            nano_cpus=int(spec.cpus * 1e9),
            mem_limit=f"{spec.memory_mb}m",
            pids_limit=spec.pids_limit,
            # no log file: what goes through the channel (commands' output, a tree's archive) is read once, by
            # the harness; Docker's json-file driver would write all of it to disk again
            log_config={"type": "none"},
            runtime=runtime,
            cap_drop=["ALL"],
            cap_add=list(CAPABILITIES),
            security_opt=list(SECURITY_OPT),
            **dict(self.host_config_extra),
        )
        files = {"etc/hosts": LOOPBACK_HOSTS} if mode == NO_NETWORK else {}
        if spec.shell_setup:
            files[SHELL_SETUP_PATH.lstrip("/")] = spec.shell_setup + "\n"
        root = self._image_config(spec.image)[1]
        # a shell that cannot fork dies (its container with it): with room for hardly any process, PID 1 sleeps
        # and every command is an exec, which then fails alone
        with_channel = self.channels and spec.pids_limit >= CHANNEL_MIN_PIDS
        channel = None
        try:  # the low-level calls save the SDK's extra inspect per container
            created = api.create_container(
                spec.image,
                entrypoint=["/bin/sh", "-c", SERVER] if with_channel else ["sleep", "infinity"],
                command=[],
                name=name,
                labels=labels,
                host_config=host,
                network_disabled=mode == NO_NETWORK,
                environment=env or None,
                working_dir=spec.workdir,
                stdin_open=with_channel,
            )
            cid = str(created["Id"])
            channel = Channel.attach(api, cid, root) if with_channel else None
            api.start(cid)
            if (channel is None or not root or not _start_up(channel, files)) and files:
                api.put_archive(cid, "/", tar_files(files))  # ~0.05 CPU s of dockerd that the channel saves
        except (APIError, DockerException) as exc:
            if channel is not None:
                channel.close()
            self._remove_by_name(name)
            self._image_ids = {t: i for t, i in self._image_ids.items() if t != spec.image}
            raise ContainerStartError(self._start_failure(name, exc)) from None
        if channel is not None:
            self._channels[cid] = channel
        self._runtime_of[cid] = runtime or str(self.info().get("DefaultRuntime") or "default")
        return cid

    def _start_failure(self, name: str, exc: Exception) -> str:
        """Why a container did not start (sandbox/gone.py); the unroutable network, ours, is made again next time."""
        why, removed = start_failure(name, exc)
        if removed:
            with self._lock_for(UNROUTABLE_NETWORK):
                self._unroutable_checked = False
        return why

    def _unroutable_network(self) -> str:
        """UNROUTABLE_NETWORK's name, the network made first if the daemon has none of that name (checked once per
        engine); one of that name made otherwise (not internal, or other options) is refused."""
        if not self.capabilities.unroutable_network:
            raise Unsupported(f"the {self.name} backend cannot start a sandbox on an unroutable network")
        with self._lock_for(UNROUTABLE_NETWORK):
            if self._unroutable_checked:
                return UNROUTABLE_NETWORK
            api = self.client.api
            try:
                if not api.networks(names=[UNROUTABLE_NETWORK]):
                    with contextlib.suppress(APIError):  # made meanwhile by another engine: inspected below
                        api.create_network(
                            UNROUTABLE_NETWORK, driver="bridge", internal=True, options=UNROUTABLE_OPTIONS,
                            labels={"trialbook.network": UNROUTABLE},
                        )  # fmt: skip
                net = api.inspect_network(UNROUTABLE_NETWORK)
            except (APIError, DockerException) as exc:
                raise ContainerStartError(f"the network {UNROUTABLE_NETWORK} could not be made: {exc}") from None
            options = net.get("Options") or {}
            if not net.get("Internal") or any(options.get(k) != v for k, v in UNROUTABLE_OPTIONS.items()):
                raise ContainerStartError(
                    f"the Docker network {UNROUTABLE_NETWORK} is not internal with {UNROUTABLE_OPTIONS}: remove it "
                    f"(docker network rm {UNROUTABLE_NETWORK}) and trialbook makes it again"
                )
            self._unroutable_checked = True
        return UNROUTABLE_NETWORK

    def _remove_by_name(self, name: str) -> None:
        with contextlib.suppress(APIError, DockerException):
            self.client.containers.get(name).remove(force=True)

    @staticmethod
    def _filters(run: str | None, ledger: str | None) -> dict[str, list[str]]:
        labels = [f"{LABEL_RUN}={run}" if run else LABEL_RUN]
        if ledger:
            labels.append(f"{LABEL_LEDGER}={ledger}")
        return {"label": labels}

    def containers(self, run: str | None = None, ledger: str | None = None) -> list[str]:
        """Ids of the labelled containers (the low-level list: no per-container inspect that a container
        removed meanwhile by its own trial would turn into NotFound)."""
        return [c["Id"] for c in self.client.api.containers(all=True, filters=self._filters(run, ledger))]

    def images(self, run: str | None = None, ledger: str | None = None) -> list[str]:
        """Ids of the labelled images (the low-level list, as for containers: an image removed meanwhile by
        another cleaner, such as another Ray node on the same daemon, is no inspect failing with NotFound)."""
        return [i["Id"] for i in self.client.api.images(filters=self._filters(run, ledger))]

    def clean(self, run: str | None = None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        """Remove every labelled container (and image) of `run`, or of all runs; with `ledger`, only the
        ones that ledger's runs started (label trialbook.ledger). Returns the counts.

        Cleaners of one daemon on this host take turns (a file lock named by the daemon's id): Ray nodes on
        one machine share its daemon, and two removals of one image race in dockerd itself."""
        daemon = str(self.info().get("ID") or "unknown").replace(":", "-").replace("/", "-")
        lock = Path(tempfile.gettempdir()) / f"trialbook-clean-{daemon}.lock"
        try:  # read-only: another user's lock file serves as well (flock needs no write access)
            fd = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o666)
        except OSError:  # no lock to be had here: a lost race is then absorbed by _gone_or_going
            return self._clean(run, images, ledger)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return self._clean(run, images, ledger)
        finally:
            os.close(fd)

    def _clean(self, run: str | None, images: bool, ledger: str | None) -> tuple[int, int]:
        n_containers = 0
        for cid in self.containers(run, ledger):
            self.forget(cid)
            try:
                self.client.api.remove_container(cid, force=True)
                n_containers += 1
            except APIError as exc:
                if not _gone_or_going(exc):
                    raise DaemonError(f"cannot remove {cid[:12]}: {exc}") from None
        n_images = 0
        if images:
            for img in self.images(run, ledger):
                try:
                    self.client.api.remove_image(img, force=True)
                    n_images += 1
                except APIError as exc:
                    # 409 for an image: a container (of another ledger or run) still uses it
                    if not _gone_or_going(exc):
                        raise DaemonError(f"cannot remove image {img[:19]}: {exc}") from None
        return n_containers, n_images


def _start_up(channel: Channel, files: dict[str, str]) -> bool:
    """A root channel's first request: whether it wrote the harness's files (not when its shell could not fork, say);
    it also finds whether the image has what an inline archive needs (Channel.tools)."""
    try:
        code, out, _ = channel.run(start_up(files), time.monotonic() + 60, lambda: False, lambda: None, None, 2000, 0)
    except ChannelBroken:
        return False
    channel.tools = code == 0 and TOOLS_FOUND in out.decode(errors="replace")
    return code == 0


# What the daemon answers when another cleaner (a second Ray node on the same daemon, a trial removing its
# own container) got there first: 404, 409 (removal in progress), or a 500 naming the vanished object,
# which dockerd returns when two removals of one image race (seen in CI: "unrecognized image ID").
_GONE_MESSAGES = ("unrecognized image id", "no such image", "no such container", "is already in progress")


def _gone_or_going(exc: APIError) -> bool:
    if isinstance(exc, NotFound) or exc.status_code in (404, 409):
        return True
    text = f"{exc.explanation or ''} {exc}".lower()
    return exc.status_code == 500 and any(m in text for m in _GONE_MESSAGES)

"""Trial sandboxes on a real Docker Engine through the docker SDK.

Every container runs `sleep infinity` as PID 1 and the agent and verifier run as execs, so a
timed-out exec can be stopped with `kill -9 -1` (everything but PID 1) and the container kept
for the next phase. Containers and built images carry `trialbook.*` labels so `clean` and
`resume` find every leftover.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound, NotFound

from trialbook.sandbox.cgroup import cgroup_counters
from trialbook.sandbox.warm import LABEL_POOL, Spec, WarmPool

LABEL_RUN = "trialbook.run"
LABEL_TRIAL = "trialbook.trial"
LABEL_TASK = "trialbook.task"
LABEL_LEDGER = "trialbook.ledger"  # the ledger's id: runs of the same name in two ledgers never meet
LABEL_RUN_ID = "trialbook.run_id"
KILL_GRACE_S = 5.0
POLL_S = 0.2
OUTPUT_TAIL = 4_000_000  # bytes of an exec's output held in memory (the rest is streamed to its sink)
SHELL_SETUP_PATH = "/etc/trialbook-shell-setup.sh"


class SandboxError(Exception):
    """An infrastructure failure (the trial says nothing about the agent)."""

    kind = "DaemonError"


class DaemonError(SandboxError):
    kind = "DaemonError"


class ImageBuildError(SandboxError):
    kind = "ImageBuildError"


class ContainerStartError(SandboxError):
    kind = "ContainerStartError"


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


def tar_bytes(local: Path, arcname: str, gzip: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gzip else "w") as tar:
        tar.add(str(local), arcname=arcname)
    return buf.getvalue()


def tar_text(arcname: str, text: str) -> bytes:
    """A one-file tar archive holding `text` at `arcname` (relative to the extraction root)."""
    data = text.encode()
    info = tarfile.TarInfo(arcname)
    info.size, info.mode = len(data), 0o644
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@dataclass
class ExecResult:
    exit_code: int | None
    output: str
    timed_out: bool
    duration_s: float


class Sandbox:
    """One running container."""

    def __init__(self, engine: DockerEngine, container: Any, stop: threading.Event | None = None) -> None:
        self.engine = engine
        self.container = container
        self.name: str = container.name
        self.id: str = container.id
        # set from outside (deadline, interrupt): a running exec is killed and reported timed out
        self.stop = stop or threading.Event()
        # a phase budget (monotonic time) no exec may run past, whatever timeout the caller asks for
        self.until: float | None = None
        self.removed = False
        self.prepared: Any = None  # what start(prepare=...) returned for a warm container (None: cold)

    def exec(
        self,
        cmd: list[str],
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        user: str = "",
        sink: IO[bytes] | None = None,
    ) -> ExecResult:
        """Run `cmd`; past `timeout` seconds every process but PID 1 is killed and timed_out is set.

        The output is streamed: all of it goes to `sink` when given, and only its last
        OUTPUT_TAIL bytes are held in memory (a 100 MB test log costs 100 MB of disk, not memory)."""
        api = self.engine.client.api
        start = time.monotonic()
        try:
            exec_id = api.exec_create(self.container.id, cmd, environment=env, workdir=workdir, user=user)["Id"]
        except (APIError, DockerException) as exc:
            raise DaemonError(f"exec in {self.name} failed: {exc}") from None
        box: dict[str, Any] = {}
        tail = bytearray()  # read here too when the exec is cut short: its output so far

        def target() -> None:
            try:
                for chunk in api.exec_start(exec_id, stream=True):
                    if sink is not None:
                        sink.write(chunk)
                    tail.extend(chunk)
                    if len(tail) > 2 * OUTPUT_TAIL:
                        del tail[: len(tail) - OUTPUT_TAIL]
            except Exception as exc:  # surfaced below, in the caller's thread
                box["err"] = exc

        worker = threading.Thread(target=target, daemon=True)
        worker.start()
        end = start + max(timeout, 0.0)
        if self.until is not None:
            end = min(end, self.until)
        while worker.is_alive() and not self.stop.is_set() and time.monotonic() < end:
            worker.join(min(POLL_S, max(end - time.monotonic(), 0.0)))
        timed_out = worker.is_alive()
        if timed_out:
            self.kill_processes()
            worker.join(KILL_GRACE_S)
        if "err" in box and not timed_out:
            raise DaemonError(f"exec in {self.name} failed: {box['err']}")
        exit_code = None
        if not timed_out:
            try:
                exit_code = api.exec_inspect(exec_id).get("ExitCode")
            except (APIError, DockerException) as exc:
                raise DaemonError(f"exec inspect in {self.name} failed: {exc}") from None
        output = bytes(tail[-OUTPUT_TAIL:]).decode("utf-8", "replace")
        return ExecResult(exit_code, output, timed_out, round(time.monotonic() - start, 3))

    def kill_processes(self) -> None:
        """SIGKILL every process in the container except PID 1 (kill(-1) spares init and the caller)."""
        with contextlib.suppress(APIError, DockerException):
            self.container.exec_run(["sh", "-c", "kill -9 -1"], detach=False)

    def running(self) -> bool:
        """Whether the container's PID 1 still runs (one inspect)."""
        try:
            return bool(self.engine.client.api.inspect_container(self.id)["State"].get("Running"))
        except NotFound:
            return False
        except (APIError, DockerException) as exc:
            raise DaemonError(f"cannot inspect {self.name}: {exc}") from None

    def kill(self) -> None:
        """SIGKILL the container's PID 1: every process in it dies at once (its files stay readable)."""
        try:
            self.container.kill()
        except NotFound:
            pass
        except APIError as exc:
            if exc.status_code != 409:  # 409: not running (already stopped)
                raise DaemonError(f"cannot kill {self.name}: {exc}") from None
        except DockerException as exc:
            raise DaemonError(f"cannot kill {self.name}: {exc}") from None

    def restart(self) -> None:
        """Kill every process (PID 1 included) and start the container again, its files kept."""
        self.kill()
        try:
            self.container.start()
        except (APIError, DockerException) as exc:
            raise DaemonError(f"cannot restart {self.name}: {exc}") from None

    def export(self, path: str, sink: IO[bytes]) -> None:
        """Stream `path` out of the container (running or stopped) as a tar archive into `sink`."""
        try:
            stream, _ = self.container.get_archive(path, chunk_size=1 << 20)
            for chunk in stream:
                sink.write(chunk)
        except NotFound:
            raise DaemonError(f"{path} does not exist in {self.name}") from None
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy of {path} out of {self.name} failed: {exc}") from None

    def put_tar(self, dest: str, archive: IO[bytes] | bytes) -> None:
        """Extract a tar archive (bytes or an open file, streamed) at `dest` in the container."""
        try:
            if not self.container.put_archive(dest, archive):
                raise DaemonError(f"copy into {self.name}:{dest} failed")
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy into {self.name}:{dest} failed: {exc}") from None

    def limit_hits(self) -> dict[str, int]:
        """How often the container hit its memory limit (OOM kills) and its pids limit, from its cgroup;
        Docker's own OOMKilled flag counts too (all a remote daemon's host shows)."""
        hits, read = cgroup_counters(self.id)
        if "oom_kills" not in read:  # no cgroup to read: ask the daemon (a round trip on the trial's path)
            with contextlib.suppress(APIError, DockerException):
                if self.engine.client.api.inspect_container(self.id)["State"].get("OOMKilled"):
                    hits["oom_kills"] = 1
        return hits

    def write_shell_setup(self, text: str) -> None:
        self.put_tar("/", tar_text(SHELL_SETUP_PATH.lstrip("/"), text + "\n"))

    def put_dir(self, local: Path, dest: str) -> None:
        """Copy a local folder's contents to `dest` in the container (created if missing)."""
        try:
            if not self.container.put_archive("/", tar_bytes(local, dest.strip("/"))):
                raise DaemonError(f"copy of {local} into {self.name} failed")
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy of {local} into {self.name} failed: {exc}") from None

    def read_file(self, path: str) -> bytes | None:
        """A file's bytes from the container, None when it does not exist."""
        try:
            stream, _ = self.container.get_archive(path)
        except NotFound:
            return None
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy of {path} out of {self.name} failed: {exc}") from None
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            f = tar.extractfile(member)
            return f.read() if f else None

    def remove(self) -> None:
        """Remove the container (once: a trial's cleanup may ask again)."""
        if self.removed:
            return
        if self.engine.warm is not None:  # off the trial's critical path; `clean` finds a failed one
            self.engine.warm.discard(self.id)
            self.removed = True
            return
        try:
            self.container.remove(force=True)
        except NotFound:
            pass
        except (APIError, DockerException) as exc:
            raise DaemonError(f"cannot remove {self.name}: {exc}") from None
        self.removed = True


class DockerEngine:
    """The daemon connection, image builds and container lifecycle."""

    def __init__(self, pool: int = 10) -> None:
        try:
            self.client = docker.from_env(timeout=120, max_pool_size=pool)
            self.client.ping()
        except DockerException as exc:
            raise DaemonError(f"no Docker daemon: {exc}") from None
        self._build_locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()
        self.warm: WarmPool | None = None
        self.pool_stats: dict[str, int] = {}  # the last closed pool's counts (taken, cold, created, ...)
        self.prepare_ahead = True  # open_pool: whether warm containers run their `prepare` step (see there)
        self._image_ids: dict[str, str] = {}  # built tags seen this run: no image inspect per trial
        self._workdirs: dict[str, str | None] = {}

    def open_pool(self, concurrency: int) -> WarmPool:
        """Start keeping containers warm (sandbox/warm.py) until close_pool()."""
        try:
            info = self.client.info()
        except (APIError, DockerException):
            info = {}
        host_mb = int(info.get("MemTotal", 0)) // 2**20 or None
        # A warm container's preparation is one more exec (~0.06-0.09 s of the daemon host's CPU, mostly runc's,
        # benchmarks/bench_harness.py --cpu); with a core to spare it is off the trials' path, but when the trials
        # keep every core busy it competes with them, and the trial's own exec does the same work without it.
        self.prepare_ahead = concurrency < int(info.get("NCPU") or 0)
        self.warm = WarmPool(
            create=lambda spec, name: self._create(spec, name, {**dict(spec.labels), LABEL_POOL: "1"}),
            remove=lambda cid: self.client.api.remove_container(cid, force=True),
            depth=concurrency + 1,  # per spec: the agent's and the verifier's are specs apart
            limit=2 * concurrency + 2,
            memory_mb=host_mb,
            # creations and removals run side by side with the trials (2 workers fell behind 4 trials);
            # with them the trials' threads stay within the client's 10 connections
            workers=concurrency + 1,
        )
        return self.warm

    def close_pool(self) -> None:
        warm, self.warm = self.warm, None
        if warm is not None:
            warm.close()
            self.pool_stats = dict(warm.stats)

    def version(self) -> str:
        return str(self.client.version().get("Version"))

    def image_workdir(self, ref: str) -> str | None:
        """The image's WORKDIR (None when it has none)."""
        if ref in self._workdirs:
            return self._workdirs[ref]
        try:
            workdir = self.client.api.inspect_image(ref).get("Config", {}).get("WorkingDir") or None
        except (APIError, DockerException) as exc:
            raise DaemonError(f"image inspect {ref} failed: {exc}") from None
        self._workdirs[ref] = workdir
        return workdir

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

    def start(
        self,
        image: str,
        name: str,
        labels: dict[str, str],
        cpus: float,
        memory_mb: int,
        pids_limit: int,
        network: bool,
        stop: threading.Event | None = None,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        shell_setup: str | None = None,
        prepare: tuple[str, Callable[[Sandbox], Any]] | None = None,
    ) -> Sandbox:
        """A running container; `shell_setup` is written to SHELL_SETUP_PATH and named by BASH_ENV,
        so every non-interactive `bash` (agent commands, test.sh) starts in the task's environment.
        With a warm pool open, a waiting container of the same spec is taken when there is one;
        `prepare` = (what, fn): warm containers of this kind are a spec apart, and fn(box) ran on each
        while it waited (its result is box.prepared; a cold container, or any container while
        `prepare_ahead` is off, is not prepared: box.prepared is None)."""
        spec = self._spec(image, labels, cpus, memory_mb, pids_limit, network, env, workdir, shell_setup, prepare)
        got = self.warm.take(spec, self._hook(prepare)) if self.warm is not None else None
        if got is not None:
            box = self._box(got.id, got.name, stop)
            box.prepared = got.prepared
            return box
        return self._box(self._create(spec, name, labels), name, stop)

    def ahead(
        self,
        image: str,
        labels: dict[str, str],
        cpus: float,
        memory_mb: int,
        pids_limit: int,
        network: bool,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        shell_setup: str | None = None,
        prepare: tuple[str, Callable[[Sandbox], Any]] | None = None,
    ) -> None:
        """With a warm pool open: start warming containers that start() will be asked for later (a trial's
        verifier containers, while its agent works)."""
        if self.warm is not None:
            spec = self._spec(image, labels, cpus, memory_mb, pids_limit, network, env, workdir, shell_setup, prepare)
            self.warm.expect(spec, self._hook(prepare))

    @staticmethod
    def _spec(
        image: str, labels: dict[str, str], cpus: float, memory_mb: int, pids_limit: int, network: bool,
        env: dict[str, str] | None, workdir: str | None, shell_setup: str | None,
        prepare: tuple[str, Callable[[Sandbox], Any]] | None,
    ) -> Spec:  # fmt: skip
        return Spec(
            image, cpus, memory_mb, pids_limit, network, tuple(sorted((env or {}).items())), workdir, shell_setup,
            tuple(sorted((k, v) for k, v in labels.items() if k != LABEL_TRIAL)), prepare[0] if prepare else "",
        )  # fmt: skip

    def _hook(self, prepare: tuple[str, Callable[[Sandbox], Any]] | None) -> Callable[[str, str], Any] | None:
        if prepare is None or not self.prepare_ahead:  # then the spec's containers wait unprepared
            return None
        fn = prepare[1]
        return lambda cid, name: fn(self._box(cid, name))

    def _box(self, cid: str, name: str, stop: threading.Event | None = None) -> Sandbox:
        return Sandbox(self, self.client.containers.prepare_model({"Id": cid, "Name": name}), stop)

    def _create(self, spec: Spec, name: str, labels: dict[str, str]) -> str:
        """Create and start a container of `spec`; its id."""
        api = self.client.api
        env = dict(spec.env)
        if spec.shell_setup:
            env["BASH_ENV"] = SHELL_SETUP_PATH
        host = api.create_host_config(
            network_mode="bridge" if spec.network else "none",
            nano_cpus=int(spec.cpus * 1e9),
            mem_limit=f"{spec.memory_mb}m",
            pids_limit=spec.pids_limit,
        )
        try:  # the low-level calls save the SDK's extra inspect per container
            created = api.create_container(
                spec.image,
                entrypoint=["sleep", "infinity"],
                command=[],
                name=name,
                labels=labels,
                host_config=host,
                environment=env or None,
                working_dir=spec.workdir,
            )
            api.start(created["Id"])
            if spec.shell_setup:
                api.put_archive(created["Id"], "/", tar_text(SHELL_SETUP_PATH.lstrip("/"), spec.shell_setup + "\n"))
        except (APIError, DockerException) as exc:
            self._remove_by_name(name)
            self._image_ids = {t: i for t, i in self._image_ids.items() if t != spec.image}
            raise ContainerStartError(f"container {name} did not start: {exc}") from None
        return str(created["Id"])

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
        try:
            daemon = str(self.client.info().get("ID") or "unknown").replace(":", "-").replace("/", "-")
        except (APIError, DockerException) as exc:
            raise DaemonError(f"cannot reach the Docker daemon: {exc}") from None
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


# What the daemon answers when another cleaner (a second Ray node on the same daemon, a trial removing its
# own container) got there first: 404, 409 (removal in progress), or a 500 naming the vanished object,
# which dockerd returns when two removals of one image race (seen in CI: "unrecognized image ID").
_GONE_MESSAGES = ("unrecognized image id", "no such image", "no such container", "is already in progress")


def _gone_or_going(exc: APIError) -> bool:
    if isinstance(exc, NotFound) or exc.status_code in (404, 409):
        return True
    text = f"{exc.explanation or ''} {exc}".lower()
    return exc.status_code == 500 and any(m in text for m in _GONE_MESSAGES)

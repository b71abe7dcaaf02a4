"""One trial's container: timed execs (through its command channel when it has one), copies in and out,
kill and removal. The daemon connection, images and the container lifecycle are sandbox/docker.py's."""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import os
import posixpath
import shlex
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, Protocol

from docker.errors import APIError, DockerException, NotFound
from requests.exceptions import RequestException

from trialbook.capped import CappedSink, Sink
from trialbook.outcomes import ErrorKind
from trialbook.sandbox import quota
from trialbook.sandbox.cgroup import cgroup_counters, parse_report, report_script
from trialbook.sandbox.channel import TOOLS, Channel, ChannelBroken, ChannelBusy, command


class Engine(Protocol):
    """What a sandbox needs of sandbox/docker.py's DockerEngine."""

    client: Any  # docker.DockerClient
    warm: Any  # sandbox/warm.py's WarmPool while a pool is open, else None

    def forget(self, container_id: str) -> None: ...
    def remove_container(self, container_id: str) -> None: ...


KILL_GRACE_S = 5.0
POLL_S = 0.2
OUTPUT_TAIL = 4_000_000  # bytes of an exec's output held in memory (the rest is streamed to its sink)
SHELL_SETUP_PATH = "/etc/trialbook-shell-setup.sh"
# bytes of a tar extracted through the channel, inline (the server reads a request byte by byte, ~0.4 ms per
# KB of base64; an archive copy costs ~0.05 CPU s of dockerd re-executing itself)
INLINE_TAR = 64_000
# bytes of plain files an archive may hold to be written by shell builtins (write_inline): the server reads a
# request byte by byte, so past ~8 KB base64 of the gzipped archive and three processes cost less
INLINE_WRITES = 8_000
NO_TOOLS = 98
SNAPSHOT_LIMIT = 4 << 30  # bytes of a working tree written by the container's own tar (Sandbox.snapshot)


class SandboxError(Exception):
    """An infrastructure failure (the trial says nothing about the agent)."""

    kind = ErrorKind.DAEMON


KILLED_FROM_OUTSIDE = (137, 143)  # SIGKILL, SIGTERM: how a stopping daemon ends its containers' PID 1


class DaemonError(SandboxError):
    kind = ErrorKind.DAEMON


class TreeTooLargeError(SandboxError):
    """A working tree copied out of a container ran past SNAPSHOT_LIMIT bytes as an archive (verify/blame.py asks
    whether the image's own tree fits before it blames the change)."""

    kind = ErrorKind.ISOLATION

    def __init__(self, path: str, name: str, limit: int) -> None:
        super().__init__(f"{path} in {name} is over {limit:,} bytes as an archive")
        self.limit = limit


class ImageBuildError(SandboxError):
    kind = ErrorKind.IMAGE_BUILD


class RuntimeUnknownError(SandboxError):
    """A run asked for an OCI runtime the Docker daemon does not have (DockerEngine.runtime_for)."""

    kind = ErrorKind.CONTAINER_START


class ContainerStartError(SandboxError):
    kind = ErrorKind.CONTAINER_START


def tar_bytes(local: Path, arcname: str, gzip: bool = False) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gzip else "w") as tar:
        tar.add(str(local), arcname=arcname)
    return buf.getvalue()


def tar_files(files: dict[str, str]) -> bytes:
    """A tar archive holding each text at its name (relative to the extraction root)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for arcname, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(arcname)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def tar_text(arcname: str, text: str) -> bytes:
    """A one-file tar archive holding `text` at `arcname` (relative to the extraction root)."""
    return tar_files({arcname: text})


def unpack_inline(payload: str, dest: str) -> str:
    """Shell that unpacks a tar.gz carried base64-encoded in the text itself at `dest` (saves a copy through the
    daemon); it exits NO_TOOLS when the image lacks base64, gzip or tar, or the unpacking fails."""
    q = shlex.quote(dest)
    return (
        f"for t in {TOOLS}; do command -v $t >/dev/null || exit {NO_TOOLS}; done\n"
        f"{{ [ -d {q} ] || mkdir -p {q}; }} && echo {payload} | base64 -d | tar -xzf - -C {q} || exit {NO_TOOLS}\n"
    )


def write_inline(data: bytes, dest: str) -> str | None:
    """Shell text that writes a small archive's folders and plain UTF-8 files below `dest` with the shell's own
    `printf` and at most two processes (one `mkdir -p`, a `chmod` per mode other than 0644/0755), where
    extracting it costs four (a subshell, base64, tar, gzip: ~1 ms of CPU each); None when the archive holds
    anything else (a link, a file with a NUL byte or not UTF-8, a path leaving `dest`) or more than
    INLINE_WRITES bytes. Each text goes in single-quoted (shlex.quote), so the shell expands nothing of it."""
    dirs: dict[str, int] = {}
    files: list[tuple[str, str, int]] = []
    size = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            for member in tar:
                parts = PurePosixPath(member.name).parts
                if not parts or parts[0] == "/" or ".." in parts:
                    return None
                member.name.encode("utf-8")  # a name that is not UTF-8 (tarfile's surrogates): the archive is extracted
                path = posixpath.join(dest, *parts)
                if member.isdir():
                    dirs[path] = member.mode & 0o7777
                elif member.isfile():
                    raw = tar.extractfile(member)
                    content = raw.read() if raw is not None else b""
                    size += len(content)
                    if size > INLINE_WRITES or b"\0" in content:
                        return None
                    files.append((path, content.decode("utf-8"), member.mode & 0o7777))
                else:
                    return None
    except (tarfile.TarError, UnicodeDecodeError, UnicodeEncodeError):
        return None
    for path, _, _ in files:  # a file's folders, when the archive does not list them
        parent = posixpath.dirname(path)
        while parent not in dirs and parent not in ("/", ""):
            dirs[parent] = 0o755
            parent = posixpath.dirname(parent)
    lines = ["umask 022"]
    if dirs:
        lines.append("mkdir -p " + " ".join(shlex.quote(d) for d in sorted(dirs)))
    lines += [f"printf %s {shlex.quote(text)} > {shlex.quote(path)}" for path, text, _ in files]
    modes: dict[int, list[str]] = {}
    for path, mode in [*dirs.items(), *((p, m) for p, _, m in files)]:
        if mode not in (0o644, 0o755) or (mode == 0o755 and path not in dirs):
            modes.setdefault(mode, []).append(path)
    lines += [f"chmod {mode:o} " + " ".join(shlex.quote(p) for p in paths) for mode, paths in sorted(modes.items())]
    return " && ".join(lines) + "\n"


def _small(archive: IO[bytes] | bytes) -> bytes | None:
    """The archive's bytes when it is at most INLINE_TAR long (a file is read from its current position)."""
    if isinstance(archive, bytes):
        return archive if len(archive) <= INLINE_TAR else None
    here = archive.tell()
    data = archive.read(INLINE_TAR + 1)
    archive.seek(here)
    return data if len(data) <= INLINE_TAR else None


def _payload(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


@dataclass
class ExecResult:
    exit_code: int | None
    output: str
    timed_out: bool
    duration_s: float


class Sandbox:
    """One running container."""

    def __init__(self, engine: Engine, container: Any, stop: threading.Event | None = None) -> None:
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
        self.channel: Channel | None = None  # the container's command channel (sandbox/channel.py), if any
        self.runtime: str | None = None  # the OCI runtime it was created with (DockerEngine.runtime_for)
        self.attempt: int | None = None  # the trial's attempt, set on the agent's box (its seeds derive from it)
        # the limit counters its last process (Sandbox.finish) read from inside, once that ended with the container
        self.reported: tuple[dict[str, int], set[str]] | None = None
        self.disk_hit = 0  # bytes its own layer held when last found past its quota (watch_disk); 0: never
        self.disk_limit = 0
        self._watched: tuple[str | None] | None = None  # (the layer's host folder,) once the disk watch started

    def watch_disk(self, limit: int) -> None:
        """Measure the container's own layer (what it wrote, whoever wrote it) against `limit` bytes until it is
        removed: past it, every process but PID 1 is killed (again at each look while it stays past), and a phase with
        a budget (`until`: the agent's) ends at once; `disk_hit` says so. The storage driver here (overlay2 on ext4)
        has no per-container quota (`--storage-opt size` needs xfs with project quotas), so the harness keeps it."""
        self.disk_limit = limit
        threading.Thread(target=self._watch_disk, name=f"disk-{self.name}", daemon=True).start()

    def _watch_disk(self) -> None:
        try:
            upper = self.upper_dir()
            self._watched = (upper,)
        except DaemonError:
            return
        quota.watch(self, upper)

    def look_at_disk(self) -> int:
        """One look at the disk quota now (the watch's next may come after the phase ended): `disk_hit`."""
        if self.disk_limit and not self.removed and self._watched is not None:
            quota.look(self, self._watched[0])
        return self.disk_hit

    def exec(
        self,
        cmd: list[str],
        timeout: float,
        env: dict[str, str] | None = None,
        workdir: str | None = None,
        user: str = "",
        sink: Sink | None = None,
        trusted: bool = False,
    ) -> ExecResult:
        """Run `cmd`; past `timeout` seconds every process but PID 1 is killed and timed_out is set.

        Through the container's channel when it can (`user` "" or, in a container running as root, "root"),
        else as a `docker exec`; `trusted`: always an exec, whose end only the daemon reports (the verifier's
        run: the code under test can forge anything the channel's server could print).
        The output is streamed: all of it goes to `sink` when given, and only its last
        OUTPUT_TAIL bytes are held in memory (a 100 MB test log costs 100 MB of disk, not memory)."""
        start = time.monotonic()
        end = self._end(start, timeout)
        channel = None if trusted else self._channel_for(user)
        text = command(cmd, env, workdir) if channel is not None else None
        if channel is not None and text is not None:
            res = self._run(channel, text, start, end, sink)
            if res is not None:
                return res
        return self._exec(cmd, start, end, env, workdir, user, sink)

    def run_script(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult:
        """Run the harness's own POSIX-sh `script` as root: in the channel's subshell itself (no process started
        for the shell), else as `sh -c` through the daemon. All of its output goes to `sink` when given."""
        start = time.monotonic()
        end = self._end(start, timeout)
        channel = self._channel_for("root")
        res = self._run(channel, script, start, end, sink) if channel is not None else None
        if res is not None:
            return res
        return self._exec(["sh", "-c", script], start, end, None, None, "root", sink)

    def _run(self, channel: Channel, text: str, start: float, end: float, sink: Sink | None) -> ExecResult | None:
        """Shell `text` through the channel; None when another thread's request holds it (then an exec serves)."""
        try:
            code, out, timed_out = channel.run(text, end, self.stop.is_set, self.kill_processes, sink, OUTPUT_TAIL,
                                               KILL_GRACE_S)  # fmt: skip
        except ChannelBusy:
            return None
        except ChannelBroken as exc:
            raise DaemonError(f"command in {self.name} failed: {exc}") from None
        output = out.decode("utf-8", "replace")
        return ExecResult(code, output, timed_out, round(time.monotonic() - start, 3))

    def finish(self, script: str, timeout: float, sink: Sink | None = None) -> ExecResult | None:
        """Run POSIX-sh `script` as the container's last process, through the channel: PID 1's own shell runs it,
        so no process in the container can kill it (a namespace's init ignores their signals) or print after it
        (the output is read until the container stops), and its exit code is the daemon's word. Past `timeout`
        the container is killed (timed_out). None when the container has no channel (the caller then uses `exec`).
        After it the container is stopped: its cgroup is gone, and `limit_hits` reads what `report_limits`
        was given (cgroup.report_script's output, printed by `cmd` at its end)."""
        channel = self._channel_for("")
        if channel is None:
            return None
        start = time.monotonic()
        end = self._end(start, timeout)
        try:
            out, timed_out = channel.finish(script, end, self.stop.is_set, self._kill_pid_1, sink, OUTPUT_TAIL,
                                            KILL_GRACE_S)  # fmt: skip
        except ChannelBusy:
            return None
        except ChannelBroken as exc:
            raise DaemonError(f"command in {self.name} failed: {exc}") from None
        finally:
            self.channel = None
            self.engine.forget(self.id)
        try:
            status = self.engine.client.api.wait(self.id, timeout=KILL_GRACE_S + 30)["StatusCode"]
        except (APIError, DockerException, RequestException) as exc:
            raise DaemonError(f"cannot read how {self.name} ended: {exc}") from None
        output = out.decode("utf-8", "replace")
        return ExecResult(None if timed_out else int(status), output, timed_out, round(time.monotonic() - start, 3))

    def _end(self, start: float, timeout: float) -> float:
        """When a command started at `start` (monotonic) must end: after `timeout`, within the phase's budget."""
        end = start + max(timeout, 0.0)
        return end if self.until is None else min(end, self.until)

    def _kill_pid_1(self) -> None:
        with contextlib.suppress(APIError, DockerException):
            self.container.kill()

    def limits_script(self) -> str:
        """Shell (builtins only) printing the container's limit counters from inside: the end of a last process's
        script, whose output then goes to `report_limits` (its cgroup is gone once it stops)."""
        return report_script()

    def report_limits(self, text: str) -> None:
        """The limit counters the container's last process read from inside (cgroup.report_script's lines)."""
        self.reported = parse_report(text)

    def _channel_for(self, user: str) -> Channel | None:
        """The channel, when it is alive and runs commands as `user` ("" or, in a container running as root,
        "root"); else None (the daemon's calls then serve)."""
        channel = self.channel
        if channel is None or not channel.alive or user not in ("", "root") or (user == "root" and not channel.root):
            return None
        return channel

    def _exec(
        self,
        cmd: list[str],
        start: float,
        end: float,
        env: dict[str, str] | None,
        workdir: str | None,
        user: str,
        sink: Sink | None,
    ) -> ExecResult:
        api = self.engine.client.api
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
        self.engine.forget(self.id)
        self.channel = None
        try:
            self.container.kill()
        except NotFound:
            pass
        except APIError as exc:
            # 409: not running (already stopped); Podman answers 500 "container state improper" instead
            if exc.status_code != 409 and "state improper" not in str(exc.explanation or exc):
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

    def export(self, path: str, sink: Sink) -> None:
        """Stream `path` out of the container (running or stopped) as a tar archive into `sink`; past SNAPSHOT_LIMIT
        bytes, TreeTooLargeError (a sparse file of a terabyte, no disk behind it, streams a terabyte of zeros)."""
        capped = CappedSink(sink, SNAPSHOT_LIMIT)
        try:
            stream, _ = self.container.get_archive(path, chunk_size=1 << 20)
            for chunk in stream:
                capped.write(chunk)
                if capped.over:
                    stream.close()
                    raise TreeTooLargeError(path, self.name, capped.limit)
        except NotFound:
            raise DaemonError(f"{path} does not exist in {self.name}") from None
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy of {path} out of {self.name} failed: {exc}") from None

    def upper_dir(self) -> str | None:
        """The host folder of the container's own layer (overlay2's upper dir: what the container added, changed or
        deleted) when the daemon is on this host and it can be read here; None otherwise (a remote daemon, another
        storage driver, a user without access to the daemon's folders)."""
        try:
            driver = self.engine.client.api.inspect_container(self.id).get("GraphDriver") or {}
        except (APIError, DockerException, RequestException) as exc:
            raise DaemonError(f"cannot inspect {self.name}: {exc}") from None
        upper: str | None = (driver.get("Data") or {}).get("UpperDir")
        if driver.get("Name") not in ("overlay2", "overlay") or not upper or not os.access(upper, os.R_OK | os.X_OK):
            return None
        return upper

    def changes(self) -> dict[str, str]:
        """What differs in the container's filesystem (running or stopped) from its image, by path: "A" added, "C"
        changed, "D" deleted; the daemon's reading of the container's own layer, no tool in the container asked."""
        try:
            found = self.container.diff() or []
        except (APIError, DockerException, RequestException) as exc:
            raise DaemonError(f"cannot list the changes in {self.name}: {exc}") from None
        return {c["Path"]: "CAD"[c["Kind"]] for c in found if c.get("Kind") in (0, 1, 2)}

    def put_tar(self, dest: str, archive: IO[bytes] | bytes) -> None:
        """Extract a tar archive (bytes or an open file, streamed) at `dest` in the container: a small one
        through a root channel (gzip + base64 in the command's text: no archive copy through the daemon),
        else, or when the image lacks base64, gzip or tar, through the daemon."""
        small = _small(archive)
        if small is not None and self._channel_for("root") is not None:
            text = write_inline(small, dest) or unpack_inline(_payload(small), dest)
            if self.run_script(text, timeout=120).exit_code == 0:  # in the channel's subshell: no `sh` started
                return
            if not isinstance(archive, bytes):  # a failed extraction is redone in full through the daemon
                archive.seek(0)
        try:
            if not self.container.put_archive(dest, archive):
                raise DaemonError(f"copy into {self.name}:{dest} failed")
        except (APIError, DockerException) as exc:
            raise DaemonError(f"copy into {self.name}:{dest} failed: {exc}") from None

    def inline_unpack(self, archive: IO[bytes] | bytes, dest: str = "/") -> str | None:
        """Shell text that extracts `archive` at `dest` from the text itself, for a request of the harness's own that
        must not fail for want of a tool: when the archive is small, by the shell's builtins (write_inline) or, when
        the image was found at start to have base64, gzip and tar (Channel.tools), by them; None otherwise (the
        caller then uses `put_tar`)."""
        channel = self._channel_for("root")
        small = _small(archive) if channel is not None else None
        if small is None or channel is None:
            return None
        return write_inline(small, dest) or (unpack_inline(_payload(small), dest) if channel.tools else None)

    def snapshot(self, path: str, sink: Sink, timeout: float = 600.0) -> bool:
        """Kill every process but PID 1 and stream `path` as a tar (its top folder named as `path`'s last part,
        as `export` gives it, but for a leading `./`; the top `.git` left out) into `sink`, through a root channel:
        True when that worked. False without one, or when the container's own `tar` failed: the caller then kills
        the container and exports (past SNAPSHOT_LIMIT bytes too: a forged `tar` may stream without end, and the
        daemon's copy decides).

        What the container's tar writes is only as trustworthy as the container: the caller treats it as
        data (verify/isolation.py re-packs it member by member)."""
        channel = self._channel_for("root")
        if channel is None:
            return False
        where = PurePosixPath(path)
        top = shlex.quote(f"./{where.name}")
        text = (  # without the top `.git`, which the caller drops anyway (a real repository's is most of its tree)
            "kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null\n"
            f"cd {shlex.quote(str(where.parent))} && exec tar -cf - --exclude={top}/.git {top} 2>/dev/null\n"
        )
        capped = CappedSink(sink, SNAPSHOT_LIMIT)
        try:  # past SNAPSHOT_LIMIT the tar is killed as on a timeout (the channel stays in step): False
            code, _, timed_out = channel.run(
                text, time.monotonic() + timeout, lambda: self.stop.is_set() or capped.over, self.kill_processes,
                capped, 0, KILL_GRACE_S,
            )  # fmt: skip
        except ChannelBroken:
            return False
        return code == 0 and not timed_out and not capped.over

    def limit_hits(self) -> dict[str, int]:
        """How often the container hit its memory limit (OOM kills) and its pids limit, from its cgroup;
        Docker's own OOMKilled flag counts too (all a remote daemon's host shows)."""
        hits, read = cgroup_counters(self.id)
        if self.reported is not None and not read:  # its cgroup went with it
            hits, read = dict(self.reported[0]), set(self.reported[1])
        if "oom_kills" not in read:  # no cgroup to read: ask the daemon (a round trip on the trial's path)
            with contextlib.suppress(APIError, DockerException):
                if self.engine.client.api.inspect_container(self.id)["State"].get("OOMKilled"):
                    hits["oom_kills"] = 1
        return hits

    def write_shell_setup(self, text: str) -> None:
        self.put_tar("/", tar_text(SHELL_SETUP_PATH.lstrip("/"), text + "\n"))

    def put_dir(self, local: Path, dest: str) -> None:
        """Copy a local folder's contents to `dest` in the container (created if missing), as `put_tar` does."""
        self.put_tar("/", tar_bytes(local, dest.strip("/")))

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
        self.engine.forget(self.id)
        self.channel = None
        if self.engine.warm is not None:  # off the trial's critical path; `clean` finds a failed one
            self.engine.warm.discard(self.id)
            self.removed = True
            return
        try:
            self.engine.remove_container(self.id)
        except NotFound:
            pass
        except (APIError, DockerException) as exc:
            raise DaemonError(f"cannot remove {self.name}: {exc}") from None
        self.removed = True

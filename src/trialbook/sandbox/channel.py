"""A command channel into a container: its PID 1 is a small POSIX-sh loop that runs what it reads on stdin.

Why: a `docker exec` costs the daemon's host ~0.06 CPU s (the containerd shim starts runc for it) and an
archive copy in or out ~0.05 (dockerd re-executes itself to pack or unpack in the container's root), while a
line written to an attached stdin costs next to nothing. A trivial trial made 3 execs, 2 copies and a kill
besides its 2 container lifecycles, which is why it cost ~3x a bare `docker run`
(benchmarks/bench_harness.py --cpu).

The protocol is strictly one request at a time, the harness waiting for each answer before it sends
the next, so nothing but a request is ever left unread on the server's stdin:

    x NONCE\\n<shell text, any number of lines>\\nNONCE\\n   ->   <its output, stderr merged>\\nNONCE RC\\n

NONCE is fresh for every request. The text runs in a subshell with stdin from /dev/null, and only once its
NONCE line came (a request cut short by the harness's end is never run); a command cut
short by the harness (`kill -9 -1` from a `docker exec`, which spares PID 1) still ends with its line.
A last request, `e NONCE` instead of `x NONCE` (`Channel.finish`), is run by PID 1 itself: its `exec` makes the
command the container's PID 1, whose end is the container's, its exit code the daemon's word.
When the harness's process goes, so does the attached stdin: the server reads its end and the container
stops (`resume` and `clean` remove it, running or not).

What may use it: every process in the container can write to the channel's stdout and, as root, read the
server's memory, so an answer is only as trustworthy as the container. The agent's container is the
agent's anyway (what its commands print is what it sees; its working tree is carried out as data and
re-checked by `verify/isolation.py`), and a fresh verifier container has run nothing of the agent's
before its tests start. The verifier's own run, whose completion must not be forgeable by the code under
test, is therefore never an `x` request: in a fresh container it is the `e` request (PID 1 cannot be killed
from inside its namespace, and nothing in the container speaks after it: the harness reads to the end of the
stream and takes the exit code from the daemon), elsewhere a `docker exec` (`Sandbox.exec(..., trusted=True)`).
A shell that cannot fork dies, and its container with it: sandbox/docker.py gives none to a container allowed
fewer than 8 processes.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shlex
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from trialbook.capped import Sink

SERVER = r"""while IFS= read -r req; do
  n=${req#[xe] }
  [ "$n" = "$req" ] && continue
  s= ok=
  while IFS= read -r l; do [ "$l" = "$n" ] && ok=1 && break; s="$s$l
"; done
  [ -n "$ok" ] || exit 0
  if [ "${req%% *}" = e ]; then exec </dev/null 2>&1; eval "$s"; exit $?; fi
  ( eval "$s" ) </dev/null 2>&1
  printf '\n%s %d\n' "$n" "$?"
done
"""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class ChannelBroken(Exception):
    """The channel no longer answers as it should (the caller falls back to the daemon's own calls)."""


class ChannelBusy(ChannelBroken):
    """Another thread's request is running (the caller uses the daemon's exec instead)."""


class Channel:
    """One attached container's stdin/stdout (the daemon's multiplexed stream, no TTY)."""

    def __init__(self, sock: socket.socket, root: bool) -> None:
        self.sock = sock
        self.alive = True
        self.root = root  # whether the server runs as root (then the harness's root commands may use it)
        # whether the image has base64, gzip and tar (found by the start-up request, sandbox/docker.py): then an
        # archive may be unpacked inline in a request that must not fail for want of them (Sandbox.inline_unpack)
        self.tools = False
        self.lock = threading.Lock()  # one request at a time
        self._raw = bytearray()  # bytes of the multiplexed stream not yet parsed into frames

    @classmethod
    def attach(cls, api: Any, container_id: str, root: bool) -> Channel | None:
        """Attach to a created container's stdin and stdout; None when this client cannot (a remote daemon
        behind a proxy, an SDK without raw sockets): the sandbox then uses the daemon's calls only."""
        try:
            raw = api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})
            sock = getattr(raw, "_sock", raw)
            if not isinstance(sock, socket.socket):
                return None
            return cls(sock, root)
        except Exception:  # noqa: BLE001 - any failure only means: no channel
            return None

    def close(self) -> None:
        """Stop using the channel: the server reads the end of its stdin and exits, PID 1 with it, so the container
        stops by itself (a removal then has nothing to kill: ~0.015 CPU s less of the daemon's host, see
        DockerEngine._remove_container). Closing the socket alone is not enough: the SDK's response still holds it."""
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            self.sock.close()

    @contextlib.contextmanager
    def _turn(self) -> Iterator[None]:
        """This thread's request, alone: ChannelBusy while another runs; any failure closes the channel."""
        if not self.alive:
            raise ChannelBroken("the channel is closed")
        if not self.lock.acquire(blocking=False):
            raise ChannelBusy("the channel is busy")
        try:
            yield
        except (OSError, ChannelBroken) as exc:
            self.close()
            raise ChannelBroken(str(exc)) from None
        finally:
            self.lock.release()

    def run(
        self,
        text: str,
        end: float,
        stopped: Callable[[], bool],
        on_timeout: Callable[[], None],
        sink: Sink | None,
        keep: int,
        grace: float,
    ) -> tuple[int | None, bytes, bool]:
        """Run shell `text`; (exit code or None when cut short, the output's last `keep` bytes, timed out).

        Past `end` (monotonic) or once `stopped()`, `on_timeout()` kills the command and its answer is
        awaited `grace` seconds more. Raises ChannelBroken when the server does not answer as it should."""
        with self._turn():
            nonce = self._send("x", text)
            marker = re.compile(rb"\n" + nonce.encode() + rb" (\d+)\n")
            hold = len(nonce) + 16  # bytes held back: a marker may straddle two reads
            pending, tail = bytearray(), _Tail(keep, sink)
            stream = _Stream(end, grace)
            for chunk in stream.chunks(self, stopped, on_timeout):
                if chunk is None:
                    raise ChannelBroken("the container's stdout closed")
                pending.extend(chunk)
                found = marker.search(pending)
                flush = found.start() if found is not None else max(len(pending) - hold, 0)
                tail.add(pending[:flush])
                if found is not None:  # anything after the marker is a leftover process's: dropped
                    code = None if stream.timed_out else int(found.group(1))
                    return code, tail.last(), stream.timed_out
                del pending[:flush]
            self.close()  # killed but no answer: the server is gone with its container
            return None, tail.last(), True

    def finish(
        self,
        text: str,
        end: float,
        stopped: Callable[[], bool],
        on_timeout: Callable[[], None],
        sink: Sink | None,
        keep: int,
        grace: float,
    ) -> tuple[bytes, bool]:
        """Run shell `text` as the container's last process (PID 1 `exec`s it) and read its output to the end of
        the stream, that is until the container stops; (the output's last `keep` bytes, timed out). Past `end`
        or once `stopped()`, `on_timeout()` (which must stop the container) is called and the end awaited `grace`
        seconds more. The channel is closed after. Raises ChannelBroken when the server could not be asked."""
        with self._turn():
            self._send("e", text)
            tail = _Tail(keep, sink)
            stream = _Stream(end, grace)
            for chunk in stream.chunks(self, stopped, on_timeout):
                if chunk is None:
                    break
                tail.add(chunk)
        self.close()
        return tail.last(), stream.timed_out

    def _send(self, kind: str, text: str) -> str:
        """Send a request of `kind` ("x" or "e"); its fresh NONCE."""
        while self._read(0.0):  # what a process left running printed since the last answer: nobody's output
            pass
        nonce = secrets.token_hex(8)
        # surrogateescape: a path of the agent's tree that is not UTF-8 goes as the bytes it is, never a raised error
        self.sock.sendall(f"{kind} {nonce}\n{text}\n{nonce}\n".encode("utf-8", "surrogateescape"))
        return nonce

    def _read(self, wait: float) -> bytes | None:
        """The payload of the stream's next frames that arrive within `wait` seconds (b"" when none did);
        None once the stream ended."""
        self.sock.settimeout(wait)  # 0: non-blocking
        try:
            data = self.sock.recv(1 << 16)
        except (TimeoutError, BlockingIOError):
            data = b""
        else:
            if not data:
                return None
        self._raw.extend(data)
        out = bytearray()
        while len(self._raw) >= 8:
            kind, size = struct.unpack(">BxxxL", self._raw[:8])
            if len(self._raw) < 8 + size:
                break
            if kind == 1:  # stdout; the commands' stderr is merged into it, the server's own ("Killed") is not
                out.extend(self._raw[8 : 8 + size])
            del self._raw[: 8 + size]
        return bytes(out)


class _Stream:
    """A request's wait for its output: past `end` (monotonic) or once stopped, the timeout is called once and the
    output awaited `grace` seconds more."""

    def __init__(self, end: float, grace: float) -> None:
        self.end, self.grace, self.timed_out = end, grace, False

    def chunks(
        self, channel: Channel, stopped: Callable[[], bool], on_timeout: Callable[[], None]
    ) -> Iterator[bytes | None]:
        """The output as it arrives (b"" when none came for a while; None once the stream ended, then no more);
        ends without None when the grace after a timeout ran out."""
        while True:
            now = time.monotonic()
            if not self.timed_out and (now >= self.end or stopped()):
                self.timed_out = True
                on_timeout()
                self.end = now + self.grace
            elif self.timed_out and now >= self.end:
                return
            chunk = channel._read(min(0.2, max(self.end - now, 0.01)))
            yield chunk
            if chunk is None:
                return


class _Tail:
    """A command's output: all of it to `sink`, its last `keep` bytes held."""

    def __init__(self, keep: int, sink: Sink | None) -> None:
        self.keep, self.sink, self.data = keep, sink, bytearray()

    def add(self, chunk: bytes | bytearray) -> None:
        if not chunk:
            return
        if self.sink is not None:
            self.sink.write(chunk)
        self.data.extend(chunk)
        if len(self.data) > 2 * self.keep:
            del self.data[: len(self.data) - self.keep]

    def last(self) -> bytes:
        return bytes(self.data[-self.keep :]) if self.keep else b""


def command(argv: list[str], env: dict[str, str] | None, workdir: str | None) -> str | None:
    """Shell text that runs `argv` as `docker exec` would (extra environment, working directory); None
    when an environment name is not a shell name (the caller then uses the daemon's exec)."""
    parts = []
    if workdir:
        parts.append(f"cd {shlex.quote(workdir)}")
    for key, value in (env or {}).items():
        if not _NAME.match(key):
            return None
        parts.append(f"export {key}={shlex.quote(value)}")
    parts.append("exec " + " ".join(shlex.quote(a) for a in argv))
    return " && ".join(parts)


def write_files(files: dict[str, str]) -> str:
    """Shell text that writes each text to its path (relative to /)."""
    return " && ".join(f"printf %s {shlex.quote(text)} > {shlex.quote('/' + path)}" for path, text in files.items())


TOOLS = "base64 gzip tar"  # what an inline archive needs (sandbox/box.py unpack_inline)
TOOLS_FOUND = "trialbook-tools"


def start_up(files: dict[str, str]) -> str:
    """Shell text for a container's first request: write the harness's files, and print TOOLS_FOUND when the image
    has every one of TOOLS (shell builtins only: no process but the request's subshell)."""
    probe = " && ".join(f"command -v {t} >/dev/null" for t in TOOLS.split()) + f" && echo {TOOLS_FOUND}"
    return f"{{ {probe}; }}; {write_files(files) or ':'}"

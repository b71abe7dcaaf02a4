"""FAKE backend "fake-sleep": no sandbox at all, for measuring the driver alone (benchmarks/bench_scale.py).

It stands for a cloud sandbox service that cannot exist on this machine: its boxes are Python objects, a command
`sleep N` (as argv or through `sh -c`/`bash -c`) waits N seconds (cut short by the trial's stop event, its phase
budget or its timeout, as a real exec is), and every other command does nothing and answers exit 0 with no output.
Files put in a box are kept in memory and read back as a real backend's would be. Nothing it reports is a test
result: a run on it is graded by whatever the verifier makes of an empty output, and is never evidence about an agent.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import re
import tarfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from trialbook.capped import Sink
from trialbook.sandbox.backend import BoxBase, BoxSpec, Capabilities, NoPool
from trialbook.sandbox.box import DaemonError, ExecResult

_SLEEP = re.compile(r"^\s*(?:exec\s+)?sleep\s+(\d+(?:\.\d+)?)\s*$")
_ids = itertools.count(1)


def sleep_seconds(cmd: list[str]) -> float | None:
    """N for `sleep N`, `sh -c 'sleep N'` or `bash -c 'sleep N'`; None for any other command."""
    if len(cmd) == 2 and cmd[0] == "sleep":
        text = f"sleep {cmd[1]}"
    elif len(cmd) == 3 and cmd[0] in ("sh", "bash", "/bin/sh", "/bin/bash") and cmd[1] == "-c":
        text = cmd[2]
    else:
        return None
    m = _SLEEP.match(text)
    return float(m.group(1)) if m else None


class FakeBox(BoxBase):
    """A box that holds files in memory and sleeps when told to."""

    def __init__(
        self, backend: FakeSleepBackend, name: str, labels: dict[str, str], stop: threading.Event | None
    ) -> None:
        super().__init__(name, f"fake{next(_ids):012d}", stop)
        self.backend, self.labels = backend, labels
        self.files: dict[str, bytes] = {}
        self.alive = True

    def exec(
        self, cmd: list[str], timeout: float, env: dict[str, str] | None = None, workdir: str | None = None,
        user: str = "", sink: Sink | None = None, trusted: bool = False,
    ) -> ExecResult:  # fmt: skip
        if self.removed:
            raise DaemonError(f"exec in {self.name} failed: it was removed")
        start = time.monotonic()
        self.backend.execs += 1
        seconds = sleep_seconds(cmd)
        if seconds is None:
            return ExecResult(0, "", False, 0.0)
        end = start + min(seconds, max(timeout, 0.0))
        if self.until is not None:
            end = min(end, self.until)
        # one wait on the stop event: woken at once by a deadline or interrupt, never polled
        self.stop.wait(max(end - time.monotonic(), 0.0))
        timed_out = self.stop.is_set() or time.monotonic() < start + seconds - 0.001
        return ExecResult(None if timed_out else 0, "", timed_out, round(time.monotonic() - start, 3))

    def put_tar(self, dest: str, archive: IO[bytes] | bytes) -> None:
        data = archive if isinstance(archive, bytes) else archive.read()
        # gzip or plain tar (the verifier's are plain): told by the magic number, not by trying every decompressor
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz" if data[:2] == b"\x1f\x8b" else "r:") as tar:
            for member in tar:
                if member.isfile():
                    f = tar.extractfile(member)
                    self.files["/" + "/".join(p for p in (dest.strip("/"), member.name.strip("/")) if p)] = (
                        f.read() if f else b""
                    )

    def export(self, path: str, sink: Sink) -> None:
        top = path.rstrip("/") or "/"
        found = {p: d for p, d in self.files.items() if p == top or p.startswith(top.rstrip("/") + "/")}
        if not found:
            raise DaemonError(f"{path} does not exist in {self.name}")
        base = top.rsplit("/", 1)[0]
        with tarfile.open(fileobj=sink, mode="w|") as tar:  # type: ignore[call-overload]  # a stream needs only write()
            for p, data in sorted(found.items()):
                info = tarfile.TarInfo(p[len(base) :].lstrip("/"))
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

    def kill(self) -> None:
        self.alive = False

    def restart(self) -> None:
        self.alive = True

    def running(self) -> bool:
        return self.alive and not self.removed

    def remove(self) -> None:
        if not self.removed:
            self.removed = True
            self.backend.forget(self)


class FakeSleepBackend:
    """FAKE: the Backend protocol over no sandbox at all (see the module's docstring)."""

    name = "fake-sleep"
    capabilities = Capabilities(
        limits=frozenset(), layer_changes=False, local=False, notes=("FAKE: commands other than sleep do nothing",)
    )

    def __init__(self, url: str | None = None) -> None:
        self.url = url
        self.warm: Any = None
        self.execs = 0
        self.started = 0
        self.peak = 0  # boxes alive at once, at most
        self._live: dict[str, FakeBox] = {}
        self._lock = threading.Lock()

    def version(self) -> str:
        return "fake-sleep"

    def ensure_image(
        self, key: str, image: str | None, context: Path, env_hash: str, run: str, network: bool,
        labels: dict[str, str] | None = None,
    ) -> tuple[str, str]:  # fmt: skip
        ref = image or f"fake/{key}:{env_hash[:12]}"
        return ref, "sha256:" + hashlib.sha256(ref.encode()).hexdigest()

    def image_workdir(self, ref: str) -> str | None:
        return None

    def image_id(self, ref: str) -> str | None:
        return "sha256:" + hashlib.sha256(ref.encode()).hexdigest()

    def start(self, spec: BoxSpec, name: str, stop: threading.Event | None = None) -> FakeBox:
        box = FakeBox(self, name, dict(spec.labels), stop)
        box.runtime = "fake"
        with self._lock:
            self._live[box.id] = box
            self.started += 1
            self.peak = max(self.peak, len(self._live))
        return box

    def ahead(self, spec: BoxSpec) -> None:
        return None

    def open_pool(self, concurrency: int) -> NoPool:
        return NoPool()

    def close_pool(self) -> None:
        return None

    def runtime_for(self, wanted: str) -> str | None:
        return None

    def forget(self, box: FakeBox) -> None:
        with self._lock:
            self._live.pop(box.id, None)

    def live(self) -> int:
        with self._lock:
            return len(self._live)

    def clean(self, run: str | None = None, images: bool = True, ledger: str | None = None) -> tuple[int, int]:
        with self._lock:
            gone = [
                b for b in self._live.values()
                if (run is None or b.labels.get("trialbook.run") == run)
                and (ledger is None or b.labels.get("trialbook.ledger") == ledger)
            ]  # fmt: skip
            for b in gone:
                b.removed = True
                self._live.pop(b.id, None)
        return len(gone), 0

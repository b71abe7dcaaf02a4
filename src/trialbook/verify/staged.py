"""A task's tests/ folder read once and kept in memory, for every trial of the task (benchmarks/bench_scale.py).

Staging the tests used to read, stat and archive the folder again in every trial (an lstat, a pwd lookup and an open
per file, a tar header built per file, test.sh read two or three times): most of the driver's CPU per trial with a
thousand trials in flight. A `Snapshot` holds what is the same for every trial of the task: its files' tar members
(headers already built for the arcname `tests`), test.sh's text and the folder's content hash. What differs per trial
(the test.sh with this trial's canary and nonces, the staging folder's random name) is added per trial, so nothing a
trial's code under test could influence is in it: it is read from the harness's own disk, never from a sandbox.

Never stale: a snapshot is served only while a walk of the folder (an lstat per entry, no read) finds every entry as
it was when the snapshot was read (type, mode, size, inode, mtime and ctime to the nanosecond). An entry modified in
the two seconds before the read could change again within its file system's timestamp granularity without its
mtime moving (git's "racy" entries): such a snapshot is used once and not kept, so the next trial reads the folder
again. Folders over CACHE_LIMIT bytes are not kept either (each trial archives them from disk, as before).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import threading
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from trialbook.tasks.testscript import read_script

CACHE_LIMIT = 64 << 20  # bytes of a tests/ folder kept in memory; a bigger one is archived from disk every trial
RACY_NS = 2_000_000_000  # an entry modified this close before the read may change unseen: not kept
ARCNAME = "tests"

Signature = tuple[tuple[str, int, int, int, int, int], ...]


@dataclass(frozen=True)
class Snapshot:
    """One read of a tests/ folder: see the module's docstring."""

    folder: str
    signature: Signature
    members: tuple[tuple[tarfile.TarInfo, bytes], ...]  # arcnames under ARCNAME; data b"" for all but files
    script: str  # tests/test.sh ("" when it is not a readable file)
    hash: str  # sha256 over the members' names, types and contents
    rendered: dict[frozenset[str], bytes]  # the members' tar bytes (no end-of-archive) without the names given
    # a gzip stream's start (`rendered` compressed) and its compressor's state after it (copied per trial)
    zipped: dict[frozenset[str], tuple[bytes, zlib._Compress]]

    def tar(self, arcname: str, hidden: frozenset[str], extra: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
        """The tests at `arcname` (members named in `hidden`, relative to the folder, left out) followed by `extra`
        (their names already final), as one uncompressed tar."""
        head = self._rendered(hidden) if arcname == ARCNAME else self._render(arcname, hidden)
        return head + _close(extra)

    def tar_gz(self, hidden: frozenset[str], extra: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
        """As `tar` at ARCNAME, gzipped: the compressor's state after the shared members is copied, not rebuilt."""
        self._rendered(hidden)
        start, state = self.zipped[hidden]
        z = state.copy()
        return start + z.compress(_close(extra)) + z.flush()

    def _rendered(self, hidden: frozenset[str]) -> bytes:
        if hidden not in self.rendered:
            data = self._render(ARCNAME, hidden)
            z = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: a gzip header and trailer, as tarfile's w:gz writes
            self.zipped[hidden], self.rendered[hidden] = (z.compress(data), z), data
        return self.rendered[hidden]

    def _render(self, arcname: str, hidden: frozenset[str]) -> bytes:
        buf = io.BytesIO()
        tar = tarfile.TarFile(fileobj=buf, mode="w")
        for info, data in self.members:
            rel = info.name[len(ARCNAME) + 1 :]
            if rel in hidden:
                continue
            copy = info.replace(name=f"{arcname}/{rel}" if rel else arcname, deep=False)
            tar.addfile(copy, io.BytesIO(data) if info.isfile() else None)
        return buf.getvalue()  # the TarFile is not closed: no end-of-archive blocks yet


def _close(extra: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.TarFile(fileobj=buf, mode="w") as tar:
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def signature(folder: Path) -> Signature | None:
    """Every entry below `folder` (and the folder itself) by relative path, with its type and mode, size, inode and
    nanosecond mtime and ctime; None when the folder cannot be read."""
    found: list[tuple[str, int, int, int, int, int]] = []
    try:
        st = os.lstat(folder)
    except OSError:
        return None
    found.append(("", st.st_mode, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
    todo = [(str(folder), "")]
    while todo:
        path, rel = todo.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            return None
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return None
            found.append((name, st.st_mode, st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns))
            if stat.S_ISDIR(st.st_mode):
                todo.append((entry.path, name))
    return tuple(sorted(found))


_cache: dict[str, Snapshot] = {}
_lock = threading.Lock()
reads = 0  # snapshots read from disk in this process (tests count them)


def snapshot(tests_dir: Path) -> Snapshot | None:
    """The folder's snapshot, read again when anything in it changed (the module's docstring); None when it cannot
    be read or is over CACHE_LIMIT (the caller archives it from disk)."""
    global reads
    key = str(tests_dir)
    sig = signature(tests_dir)
    if sig is None:
        return None
    with _lock:
        cached = _cache.get(key)
    if cached is not None and cached.signature == sig:
        return cached
    started = time.time_ns()
    snap = _read(tests_dir, sig)
    reads += 1
    if snap is None:
        return None
    racy = any(mtime >= started - RACY_NS or ctime >= started - RACY_NS for *_, mtime, ctime in sig)
    # read twice the same: nothing changed while it was read
    if not racy and sum(len(d) for _, d in snap.members) <= CACHE_LIMIT and signature(tests_dir) == sig:
        with _lock:
            _cache[key] = snap
    return snap


def _read(tests_dir: Path, sig: Signature) -> Snapshot | None:
    """The folder archived by tarfile itself (as the verifier always did: links kept as links, sorted), then kept."""
    if sum(size for _, mode, size, *_ in sig if stat.S_ISREG(mode)) > CACHE_LIMIT:
        return None
    buf = io.BytesIO()
    infos: list[tarfile.TarInfo] = []

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo:
        infos.append(info.replace(deep=False))  # as gettarinfo made it: no pax headers read back
        return info

    try:
        with tarfile.open(fileobj=buf, mode="w") as tar:
            tar.add(str(tests_dir), arcname=ARCNAME, filter=keep)
    except OSError:
        return None
    buf.seek(0)
    data: dict[str, bytes] = {}
    with tarfile.open(fileobj=buf, mode="r:") as tar:
        for info in tar:
            f = tar.extractfile(info) if info.isfile() else None
            data[info.name] = f.read() if f is not None else b""
    members = tuple((info, data.get(info.name, b"")) for info in infos)
    h = hashlib.sha256()
    for info, content in members:
        h.update(f"{info.name}\0{info.type!r}\0{info.linkname}\0{info.mode}\0".encode() + content + b"\0")
    plain = [c for i, c in members if i.name == f"{ARCNAME}/test.sh" and i.isfile()]
    script = plain[0].decode(errors="replace") if plain else None
    if script is None:  # not a plain file (a link): read as the verifier always read it
        script = read_script(tests_dir)
    return Snapshot(str(tests_dir), sig, members, script, h.hexdigest(), {}, {})


def clear() -> None:
    """Forget every snapshot (tests)."""
    with _lock:
        _cache.clear()

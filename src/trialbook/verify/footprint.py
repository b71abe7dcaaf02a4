"""What a verifier's run left changed in its fresh container outside the working tree, read from outside it.

test.sh may run tools of the image, or scripts of the task's tests, after the tests: a grader that writes the reward,
say. The code under test runs before them, as test.sh's user, and could replace either (python3 made to answer 1:
tests/harness/cheats/python_replaced_at_import.sh; a /tests grader rewritten: grader_rewritten.sh). The footprint is
read from the container's own layer, never by a tool in the container: with the daemon on this host, its overlay
upper dir walked here (a few ms); else through the daemon, `docker diff` and /tests copied out (a remote daemon:
~0.1-0.6 CPU s a reading on this 2-core machine). Outside /tests an entry counts by what it is (a file, a folder, a
link and its target, a deletion), not by its bytes: a tool test.sh installs in both runs may differ in them (a
timestamp), as may a report test.sh writes under /tests. The files the harness staged there (the task's tests/,
added in every run) count by their content too, but
the test modules look-alikes go into (by_content). verify/blame.changed_outside
compares a resolving reward file's footprint with the one the verifier leaves on the image as built, read the same
way; the verifier's Python writes no bytecode there (verify/runner.py), so that a module imported only on the
fixed code's path leaves no .pyc behind.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import PurePosixPath

from trialbook.sandbox import Box
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.tasks import TaskSpec
from trialbook.verify import task_facts
from trialbook.verify.runner import TESTS_DIR, Verdict, one_run

# Where a run leaves what it may: scratch space, logs, the kernel's own file systems, the per-user caches, settings and
# data a library fills on first use (XDG's: matplotlib's, pip's), pytest's cache, the verifier's staging folder; and
# the working tree, the change's own
SCRATCH = ("/tmp", "/var/tmp", "/var/cache", "/var/log", "/logs", "/dev", "/proc", "/sys", "/run")
USER_DATA = (".cache", ".config", ".local/share", ".local/state")
CACHE_FOLDERS = (".pytest_cache",)
STAGE_PREFIX = "/.trialbook-"  # verify/runner.verify's staging folder
UNREADABLE = "unreadable"  # /tests grown past a copy's limit, a folder that cannot be listed
HEAD_BYTES = 64 << 20  # of a file under /tests, hashed: its first 64 MiB and, past them, its last MiB
TAIL_BYTES = 1 << 20
HASH_BUDGET = 1 << 30  # bytes hashed in one reading; past it, files are known by their size only
OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")  # a folder that hides the image's below it


def _ignored(path: str, workdir: str) -> bool:
    top = workdir.rstrip("/")
    return path == top or path.startswith(f"{top}/") or _scratch(path)


def _scratch(path: str) -> bool:
    if path.startswith(STAGE_PREFIX) or any(path == p or path.startswith(f"{p}/") for p in SCRATCH):
        return True
    parts = path.split("/")
    if any(part in CACHE_FOLDERS for part in parts):
        return True
    home = "/".join(parts[2:] if parts[1:2] == ["root"] else parts[3:] if parts[1:2] == ["home"] else [])
    return any(home == d or home.startswith(f"{d}/") for d in USER_DATA)  # /root/.cache/..., /home/<user>/.cache/...


def staged(task: TaskSpec) -> frozenset[str]:
    """The paths at /tests of the regular files of the task's tests/ folder (what verify/runner.py stages there), but
    test.sh: the harness stages its own of it in each run (a nonce of its markers in it: verify/privilege.py), root's
    and unwritable to the tests, so it is counted as a file, as it is in every run."""
    return frozenset(f"{TESTS_DIR}/{path}" for path in task_facts.of(task).regular_files)


def reader(task: TaskSpec, workdir: str, resolving: bool) -> Callable[[Box, Verdict], dict[str, str] | None]:
    """For isolation.grade: the footprint of a box graded by its reward file (`resolving`: with a positive reward)."""

    def read_box(box: Box, verdict: Verdict) -> dict[str, str] | None:
        wanted = verdict.graded_by == "reward_file" and (verdict.reward > 0 or not resolving)
        return read(box, workdir, by_content(task)) if wanted else None

    return read_box


def by_content(task: TaskSpec) -> frozenset[str]:
    """The staged files at /tests counted by their content: all (staged) but the test modules a graded run's planted
    tests go into (one run, verify/onerun.py), which differ from run to run by the harness's doing; those count as
    files."""
    files = staged(task)
    if not one_run(task):
        return files
    planted = task_facts.of(task).test_modules
    modules = {PurePosixPath(m).name for m in planted}
    return frozenset(p for p in files if PurePosixPath(p).name not in modules)


def read(box: Box, workdir: str, tests: frozenset[str]) -> dict[str, str]:
    """What the box's own layer holds outside `workdir` and the places a run may write, by path, the files at `tests`
    by their content too: from the upper dir on this host (`walk`) or, failing that, through the daemon."""
    upper = box.upper_dir()
    return walk(upper, workdir, tests) if upper is not None else through_daemon(box, workdir, tests)


def walk(upper: str, workdir: str, tests: frozenset[str]) -> dict[str, str]:
    """Every entry of an overlay upper dir outside `workdir` and the ignored places, by its path in the container:
    a regular file as "file" (one of `tests`: `file <size> sha256:<hex>`), a link by its target, a deletion (a
    whiteout), a folder (opaque or not), anything else by its type. Nothing is followed: links are read as links,
    only regular files of `tests` opened."""
    out: dict[str, str] = {}
    budget = [HASH_BUDGET]
    folders = [""]
    while folders:
        rel = folders.pop()
        try:
            entries = list(os.scandir(upper + rel))
        except OSError:
            out[rel or "/"] = UNREADABLE
            continue
        for entry in entries:
            path = f"{rel}/{entry.name}"
            if _ignored(path, workdir):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    out[path] = "dir opaque" if _opaque(entry.path) else "dir"
                    folders.append(path)
                elif stat.S_ISLNK(st.st_mode):
                    out[path] = "link:" + os.readlink(entry.path)
                elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                    out[path] = "deleted"
                elif stat.S_ISREG(st.st_mode) and path in tests:
                    out[path] = f"file {st.st_size} {_digest(entry.path, st.st_size, budget)}"
                elif stat.S_ISREG(st.st_mode):
                    out[path] = "file"
                else:
                    out[path] = f"type {stat.S_IFMT(st.st_mode):o}"
            except OSError:
                out[path] = UNREADABLE
    return out


def _opaque(path: str) -> bool:
    for name in OPAQUE:
        try:
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _digest(path: str, size: int, budget: list[int]) -> str:
    if budget[0] <= 0:
        return "unhashed"
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        left = min(size, HEAD_BYTES)
        while left > 0 and (chunk := f.read(min(left, 1 << 20))):
            digest.update(chunk)
            left -= len(chunk)
        if size > HEAD_BYTES:  # a sparse terabyte is not read through
            f.seek(max(HEAD_BYTES, size - TAIL_BYTES))
            digest.update(f.read(TAIL_BYTES))
    budget[0] -= min(size, HEAD_BYTES + TAIL_BYTES)
    return f"sha256:{digest.hexdigest()}"


def through_daemon(box: Box, workdir: str, tests: frozenset[str]) -> dict[str, str]:
    """The same from the daemon: its `docker diff` ("A", "C" or "D" by path) and each entry under /tests (added in
    every run): one of `tests` by its content, "sha256:...", another file as "file", a link by its target, anything
    else by its tar type."""
    changes = box.changes()
    found = {
        path: kind for path, kind in changes.items()
        if (not _ignored(path, workdir) and not _in_tests(path)) or path == TESTS_DIR  # /tests below: by _tests
    }  # fmt: skip
    found.update(_tests(box, changes, tests))
    return found


def _tests(box: Box, changes: dict[str, str], tests: frozenset[str]) -> dict[str, str]:
    if TESTS_DIR not in changes:  # staged in every run, removed by the code under test: nothing to copy out
        return {}
    with tempfile.TemporaryFile() as sink:
        try:
            box.export(TESTS_DIR, sink)
        except TreeTooLargeError:  # grown past a copy's limit by the code under test: that is the reading
            return {TESTS_DIR: UNREADABLE}
        sink.seek(0)
        out: dict[str, str] = {}
        with tarfile.open(fileobj=sink, mode="r|") as tar:  # written by the daemon, not by the container
            for member in tar:
                path = "/" + member.name.removeprefix("./").rstrip("/")
                if _scratch(path):  # pytest's cache
                    pass
                elif member.isfile() and path not in tests:
                    out[path] = "file"
                elif member.isfile():
                    digest = hashlib.sha256()
                    data = tar.extractfile(member)
                    while data is not None and (chunk := data.read(1 << 20)):
                        digest.update(chunk)
                    out[path] = f"sha256:{digest.hexdigest()}"
                elif member.issym() or member.islnk():
                    out[path] = f"link:{member.linkname}"
                elif not member.isdir():
                    out[path] = f"type:{member.type.decode(errors='replace')}"
                tar.members = []  # type: ignore[attr-defined]  # (not in typeshed) a flood of files under /tests is not kept
        return out


def introduced(with_change: dict[str, str], without_change: dict[str, str]) -> list[str]:
    """The paths the run with the change left otherwise than the run without it, and those of /tests it left
    without (a grader removed), innermost only (a replaced /usr/bin/python3, not /usr and /usr/bin above it),
    sorted."""
    differ = {path for path, what in with_change.items() if without_change.get(path) != what}
    differ |= {path for path in without_change if path not in with_change and _in_tests(path)}
    above = {path.rsplit("/", k)[0] for path in differ for k in range(1, path.count("/"))}
    return sorted(differ - above)


def _in_tests(path: str) -> bool:
    return path == TESTS_DIR or path.startswith(f"{TESTS_DIR}/")

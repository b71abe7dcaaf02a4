"""What a verifier's run left changed in its fresh container outside the working tree, read by the daemon.

test.sh may run tools of the image, or scripts of the task's tests, after the tests: a grader that writes the reward,
say. The code under test runs before them, as test.sh's user, and could replace either (python3 made to answer 1:
tests/harness/cheats/python_replaced_at_import.sh; a /tests grader rewritten: grader_rewritten.sh). The footprint is
what the daemon reads of the stopped container: its changed paths against the image (`docker diff`) and the bytes of
every file under /tests, hashed; no tool in the container is asked. harness/blame.changed_outside compares a resolving
reward file's footprint with the one the verifier leaves on the image as built.
"""

from __future__ import annotations

import hashlib
import tarfile
import tempfile
from collections.abc import Callable

from trialbook.sandbox import Sandbox
from trialbook.sandbox.box import TreeTooLargeError
from trialbook.verify.runner import TESTS_DIR, Verdict

# Where a run leaves what it may: scratch space, logs, the kernel's own file systems, the per-user caches a library
# fills on first use (matplotlib's, pip's), the verifier's staging folder; and the working tree, the change's own
SCRATCH = ("/tmp", "/var/tmp", "/var/cache", "/var/log", "/logs", "/dev", "/proc", "/sys", "/run")
USER_CACHES = (".cache", ".config")
STAGE_PREFIX = "/.trialbook-"  # verify/runner.verify's staging folder
UNREADABLE = "unreadable"  # /tests grown past a copy's limit


def _ignored(path: str, workdir: str) -> bool:
    top = workdir.rstrip("/")
    if path == top or path.startswith(f"{top}/") or path.startswith(STAGE_PREFIX):
        return True
    if path == TESTS_DIR or path.startswith(f"{TESTS_DIR}/"):  # read by content instead: added in every run
        return True
    if any(path == p or path.startswith(f"{p}/") for p in SCRATCH):
        return True
    parts = path.split("/")  # /root/.cache/..., /home/<user>/.cache/...
    return (len(parts) > 2 and parts[1] == "root" and parts[2] in USER_CACHES) or (
        len(parts) > 3 and parts[1] == "home" and parts[3] in USER_CACHES
    )


def read(box: Sandbox, workdir: str) -> dict[str, str]:
    """The box's changes outside `workdir` and the places a run may write ("A", "C" or "D" by path), and each entry
    under /tests by its content ("sha256:...", "link:<target>", or the tar type of anything else)."""
    changes = box.changes()
    found = {path: kind for path, kind in changes.items() if not _ignored(path, workdir)}
    found.update(_tests(box, changes))
    return found


def reader(workdir: str, resolving: bool) -> Callable[[Sandbox, Verdict], dict[str, str] | None]:
    """For isolation.grade: the footprint of a box graded by its reward file (`resolving`: with a positive reward)."""

    def read_box(box: Sandbox, verdict: Verdict) -> dict[str, str] | None:
        wanted = verdict.graded_by == "reward_file" and (verdict.reward > 0 or not resolving)
        return read(box, workdir) if wanted else None

    return read_box


def _tests(box: Sandbox, changes: dict[str, str]) -> dict[str, str]:
    if TESTS_DIR not in changes:  # staged in every run: removed by the code under test (a daemon error is raised)
        return {TESTS_DIR: "missing"}
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
                if member.isfile():
                    digest = hashlib.sha256()
                    data = tar.extractfile(member)
                    while data is not None and (chunk := data.read(1 << 20)):
                        digest.update(chunk)
                    out[path] = f"sha256:{digest.hexdigest()}"
                elif member.issym() or member.islnk():
                    out[path] = f"link:{member.linkname}"
                elif not member.isdir():
                    out[path] = f"type:{member.type.decode(errors='replace')}"
                tar.members = []  # a flood of files under /tests is not kept
        return out


def introduced(with_change: dict[str, str], without_change: dict[str, str]) -> list[str]:
    """The paths the run with the change left otherwise than the run without it, innermost only (a replaced
    /usr/bin/python3, not /usr and /usr/bin above it), sorted."""
    differ = {path for path, what in with_change.items() if without_change.get(path) != what}
    above = {path.rsplit("/", k)[0] for path in differ for k in range(1, path.count("/"))}
    return sorted(differ - above)

"""verify/footprint.py without a daemon: which changed paths count, what a walk of an upper dir reads, and which
differences a comparison reports. The readings of real containers (the overlay upper dir on this host) run in
test_cheaters.py (the grader copies: a rewritten /tests grader, a replaced python3, and an honest test.sh installing a
tool of its own) and test_footprint_docker.py (both ways of reading, on one container)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from trialbook.verify.footprint import _ignored, introduced, walk


@pytest.mark.parametrize(
    ("path", "ignored"),
    [
        ("/testbed", True),
        ("/testbed/src/x.py", True),
        ("/testbed2/x", False),  # not the working tree, only a name that starts like it
        ("/tmp/x", True),
        ("/tmpx", False),
        ("/logs/verifier/reward.txt", True),
        ("/tests/grade.py", False),
        ("/tests/.pytest_cache/v/cache/lastfailed", True),
        ("/.trialbook-0123/tests", True),
        ("/root/.cache/matplotlib", True),
        ("/root/.local/share/app/state.json", True),
        ("/home/dev/.config/x", True),
        ("/home/dev/bin/python3", False),
        ("/root/.local/bin/python3", False),
        ("/root/.localx/bin", False),
        ("/usr/bin/python3", False),
        ("/etc/ld.so.preload", False),
        ("/usr/local/lib/python3.11/site-packages/x.pth", False),
    ],
)
def test_what_a_run_may_change(path: str, ignored: bool) -> None:
    assert _ignored(path, "/testbed/") is ignored


def test_a_walk_reads_what_each_entry_is_and_the_tests_by_content(tmp_path: Path) -> None:
    upper = tmp_path / "diff"
    (upper / "usr" / "bin").mkdir(parents=True)
    (upper / "usr" / "bin" / "python3").write_text("#!/bin/sh\necho 1\n")
    os.symlink("/etc/shadow", upper / "usr" / "bin" / "tool")  # read as a link, never followed
    (upper / "tests").mkdir()
    (upper / "tests" / "grade.py").write_text("print(1)\n")
    (upper / "testbed").mkdir()
    (upper / "testbed" / "stats.py").write_text("the change\n")
    (upper / "tmp").mkdir()
    os.mkfifo(upper / "tmp" / "fifo")
    os.mkfifo(upper / "usr" / "fifo")  # never opened
    (upper / "tests" / "report.xml").write_text("<a time='1.0'/>")  # test.sh's own report: not by its bytes
    tests = frozenset({"/tests/grade.py", "/tests/test.sh"})
    got = walk(str(upper), "/testbed", tests)
    assert got == {
        "/usr": "dir", "/usr/bin": "dir", "/usr/bin/python3": "file", "/usr/bin/tool": "link:/etc/shadow",
        "/usr/fifo": f"type {0o10000:o}", "/tests": "dir", "/tests/report.xml": "file",
        "/tests/grade.py": "file 9 sha256:" + hashlib.sha256(b"print(1)\n").hexdigest(),
    }  # fmt: skip
    (upper / "tests" / "grade.py").write_text("print(0)\n")  # same size, other bytes
    (upper / "tests" / "report.xml").write_text("<a time='2.0'/>")
    assert introduced(walk(str(upper), "/testbed", tests), got) == ["/tests/grade.py"]


def test_introduced_reports_the_innermost_paths_left_otherwise() -> None:
    base = {"/etc": "dir", "/etc/hosts": "file", "/usr": "dir", "/usr/local/bin/tb-grade": "file",
            "/tests": "dir", "/tests/grade.py": "file 9 sha256:a"}  # fmt: skip
    with_change = dict(base) | {
        "/usr/bin": "dir", "/usr/bin/python3": "file", "/usr/bin/python3-real": "file",
        "/tests/grade.py": "file 9 sha256:b",
    }  # fmt: skip
    assert introduced(with_change, base) == ["/tests/grade.py", "/usr/bin/python3", "/usr/bin/python3-real"]
    assert introduced(base, base) == []
    # what the baseline changed and this run did not is no tampering, but for /tests: a grader removed is
    assert introduced({"/tests": "dir", "/tests/grade.py": "file 9 sha256:a"}, base) == []
    assert introduced({"/tests": "dir"}, base) == ["/tests/grade.py"]
    assert introduced({}, base) == ["/tests/grade.py"]  # /tests gone with it: the innermost is named
    deep = {"/a/b/c/d": "file", "/a/b": "dir", "/a": "dir"}
    assert introduced(deep, {}) == ["/a/b/c/d"]

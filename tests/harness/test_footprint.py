"""harness/footprint.py without a daemon: which changed paths count, and which differences a comparison reports.
The readings themselves (the daemon's `docker diff` and /tests by content) run for real in test_cheaters.py
(the grader copies: a rewritten /tests grader, a replaced python3, and an honest test.sh installing a tool)."""

from __future__ import annotations

import pytest

from trialbook.harness.footprint import _ignored, introduced


@pytest.mark.parametrize(
    ("path", "ignored"),
    [
        ("/testbed", True),
        ("/testbed/src/x.py", True),
        ("/testbed2/x", False),  # not the working tree, only a name that starts like it
        ("/tmp/x", True),
        ("/tmpx", False),
        ("/logs/verifier/reward.txt", True),
        ("/tests/grade.py", True),  # read by content instead
        ("/.trialbook-0123/tests", True),
        ("/root/.cache/matplotlib", True),
        ("/home/dev/.config/x", True),
        ("/home/dev/bin/python3", False),
        ("/root/.local/bin/python3", False),
        ("/usr/bin/python3", False),
        ("/etc/ld.so.preload", False),
        ("/usr/local/lib/python3.11/site-packages/x.pth", False),
    ],
)
def test_what_a_run_may_change(path: str, ignored: bool) -> None:
    assert _ignored(path, "/testbed/") is ignored


def test_introduced_reports_the_innermost_paths_left_otherwise() -> None:
    base = {"/etc": "C", "/etc/hosts": "C", "/usr": "C", "/usr/local/bin/tb-grade": "A", "/tests/grade.py": "sha256:a"}
    with_change = dict(base) | {
        "/usr/bin": "C", "/usr/bin/python3": "C", "/usr/bin/python3-real": "A", "/tests/grade.py": "sha256:b",
    }  # fmt: skip
    assert introduced(with_change, base) == ["/tests/grade.py", "/usr/bin/python3", "/usr/bin/python3-real"]
    assert introduced(base, base) == []
    assert introduced({}, base) == []  # what the baseline changed and this run did not is no tampering
    assert introduced({"/tests": "missing"}, {"/tests/t.py": "sha256:a"}) == ["/tests"]
    deep = {"/a/b/c/d": "A", "/a/b": "C", "/a": "C"}
    assert introduced(deep, {}) == ["/a/b/c/d"]

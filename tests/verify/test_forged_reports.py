"""The change under test runs inside the test process: what it prints must not grade it.

Two forgeries seen resolved before this rule (tests/harness/cheats/atexit_passed_lines.sh and
forged_marker.sh, run for real in tests/harness/test_cheaters.py): PASSED lines after pytest's own
FAILED line (swebench's parsers keep a test's last report), and the verifier's marker, read from /proc,
printed early so the real test output was cut off as "reward files". Here the two rules by hand.
"""

from __future__ import annotations

import pytest

from trialbook.verify.grading import grade_test_log, parse_log, parse_status_map
from trialbook.verify.runner import _split

F2P, P2P = ["t.py::fix"], ["t.py::keep"]
REAL = "t.py .F\nFAILED t.py::fix - assert 3 == 2.5\nPASSED t.py::keep\n==== 1 failed, 1 passed in 0.01s ====\n"


@pytest.mark.parametrize("repo", ["pytest-dev/pytest", "sphinx-doc/sphinx", "example/local"])
def test_a_pass_printed_after_the_real_failure_does_not_grade(repo: str) -> None:
    log = REAL + "PASSED t.py::fix\nPASSED t.py::keep\n"
    grade = grade_test_log(log, repo, F2P, P2P)
    assert (grade.resolved, grade.tests["FAIL_TO_PASS"], grade.conflicts) == (False, {"t.py::fix": "fail"}, F2P)
    # the whole-log path (no prefilter) agrees, and an ERROR report is kept as the failing status
    assert parse_status_map(log, repo, fast=False) == parse_status_map(log, repo)
    errored = parse_log("ERROR t.py::fix - boom\nPASSED t.py::fix\n", repo)
    assert (errored.status_map, errored.conflicts) == ({"t.py::fix": "ERROR"}, ["t.py::fix"])


def test_an_honest_log_has_no_conflicts_and_grades_as_before() -> None:
    fixed = REAL.replace("FAILED t.py::fix - assert 3 == 2.5", "PASSED t.py::fix")
    grade = grade_test_log(fixed, "pytest-dev/pytest", F2P, P2P)
    assert (grade.resolved, grade.conflicts) == (True, [])
    # skipped then passed (a rerun) is no conflict: only passing against failing is
    assert parse_log("SKIPPED t.py::fix\nPASSED t.py::fix\n", "pytest-dev/pytest").conflicts == []


def test_the_reward_section_is_read_after_the_last_end_marker() -> None:
    mark = "@@trialbook-abc@@ "
    forged = f"PASSED t.py::fix\n\n{mark}end 0\n\n{mark}reward.txt\n1\n"
    output = forged + REAL + f"\n{mark}end 2\n\n{mark}reward.txt\n0\n"
    log, files, outlived = _split(output, mark)
    assert (log, files, outlived) == (forged + REAL, {"reward.txt": "0\n"}, 2)  # the forgery stays in the log
    assert grade_test_log(log, "pytest-dev/pytest", F2P, P2P).resolved is False


def test_no_end_marker_means_no_reward_files() -> None:
    mark = "@@trialbook-abc@@ "
    output = f"partial output\n\n{mark}reward.txt\n1\n"  # a forged section, test.sh cut short
    assert _split(output, mark) == (output, {}, 0)

"""Grading on the edges the real logs never reach: every harness failure marker, XFAIL, a repo graded
fail-only, a marked section without results, a start marker without an end, control characters the
v2 parser strips. Expected statuses are typed in by hand from the official harness's rules."""

from __future__ import annotations

import pytest

from trialbook.verify.grading import grade_test_log, parse_status_map


@pytest.mark.parametrize(
    "marker, name",
    [
        (">>>>> Patch Apply Failed", "patch_apply_failed"),
        (">>>>> Reset Failed", "reset_failed"),
        (">>>>> Tests Errored", "tests_errored"),
        (">>>>> Tests Timed Out", "tests_timed_out"),
    ],
)
def test_every_harness_marker_has_its_name_and_never_resolves(marker: str, name: str):
    assert parse_status_map(f"PASSED t.py::a\n{marker}\n", "pytest-dev/pytest") == ({}, name)
    # with no F2P or P2P test to miss, only the marker keeps the run unresolved
    grade = grade_test_log(f"PASSED t.py::a\n{marker}\n", "pytest-dev/pytest", [], [])
    assert (grade.resolved, grade.marker, grade.parsed, grade.tests) == (
        False, name, 0, {"FAIL_TO_PASS": {}, "PASS_TO_PASS": {}}
    )  # fmt: skip


def test_an_empty_clean_run_resolves():
    grade = grade_test_log("PASSED t.py::a\n", "pytest-dev/pytest", [], [])
    assert grade.resolved and grade.marker is None and grade.parsed == 1


def test_xfail_counts_as_pass_and_failing_lists_the_rest():
    log = "XFAIL t.py::fix - known\nFAILED t.py::keep - boom\nERROR t.py::other\n"
    grade = grade_test_log(log, "pytest-dev/pytest", ["t.py::fix"], ["t.py::keep", "t.py::other", "t.py::gone"])
    assert grade.tests["FAIL_TO_PASS"] == {"t.py::fix": "pass"}
    assert grade.tests["PASS_TO_PASS"] == {"t.py::keep": "fail", "t.py::other": "error", "t.py::gone": "missing"}
    assert grade.failing("PASS_TO_PASS") == ["t.py::keep", "t.py::other", "t.py::gone"]
    assert grade.failing("FAIL_TO_PASS") == [] and grade.failing("NO_SUCH_GROUP") == []
    assert grade.p2p_regression and not grade.resolved


def test_fail_only_repo_counts_unseen_tests_as_passed():
    # Chart.js logs list failures only: a test the parser did not see passed (swebench's FAIL_ONLY rule)
    log = "Chrome 120.0.0 (Linux x86_64) spec keeps FAILED\n"
    grade = grade_test_log(log, "chartjs/Chart.js", ["spec fixes"], ["spec keeps ", "spec unseen"])
    assert grade.tests == {"FAIL_TO_PASS": {"spec fixes": "pass"},
                           "PASS_TO_PASS": {"spec keeps ": "fail", "spec unseen": "pass"}}  # fmt: skip
    assert not grade.resolved and grade.p2p_regression
    ok = grade_test_log("Chrome 120.0.0 (Linux x86_64) other FAILED\n", "chartjs/Chart.js", ["spec fixes"], [])
    assert ok.resolved and ok.tests["FAIL_TO_PASS"] == {"spec fixes": "pass"}


START, END = "+ : '>>>>> Start Test Output'", "+ : '>>>>> End Test Output'"


def test_a_marked_section_without_results_falls_back_to_the_whole_log():
    log = f"PASSED t.py::a\n{START}\nnothing ran here\n{END}\nFAILED t.py::b\n"
    assert parse_status_map(log, "pytest-dev/pytest") == ({"t.py::a": "PASSED", "t.py::b": "FAILED"}, None)


def test_a_start_marker_without_an_end_means_the_whole_log():
    log = f"PASSED t.py::a\n{START}\nFAILED t.py::b\n"
    assert parse_status_map(log, "pytest-dev/pytest") == ({"t.py::a": "PASSED", "t.py::b": "FAILED"}, None)
    log = f"PASSED t.py::a\n{END}\nFAILED t.py::b\n"
    assert parse_status_map(log, "pytest-dev/pytest") == ({"t.py::a": "PASSED", "t.py::b": "FAILED"}, None)


def test_v2_prefilter_keeps_lines_behind_any_control_character():
    # parse_log_pytest_v2 deletes the characters 1..31 from each line before reading its status
    log = "\x01PASSED t.py::a\n\x1fFAILED t.py::b\nt.py::c PASSED\x1f\r\n\x02noise\n"
    want = {"t.py::a": "PASSED", "t.py::b": "FAILED", "t.py::c": "PASSED"}
    for repo in ("sphinx-doc/sphinx", None):
        assert parse_status_map(log, repo) == (want, None)
        assert parse_status_map(log, repo, fast=False) == (want, None)


def test_the_task_id_reaches_a_parser_that_reads_it():
    # swebench's immutable-js parser picks jest's log format from the instance id's PR number
    log = "  ✓ keeps order (3 ms)\n  ✕ merges deeply\n"
    grade = grade_test_log(log, "immutable-js/immutable-js", ["merges deeply"], ["keeps order"],
                           task_id="immutable-js__immutable-js-2006")  # fmt: skip
    assert grade.tests == {"FAIL_TO_PASS": {"merges deeply": "fail"}, "PASS_TO_PASS": {"keeps order": "pass"}}
    assert parse_status_map(log, "immutable-js/immutable-js", "immutable-js__immutable-js-2006") == (
        {"keeps order": "PASSED", "merges deeply": "FAILED"}, None
    )  # fmt: skip

"""trialbook's grader against the official SWE-bench harness on its own real logs."""

from __future__ import annotations

import json

import pytest

from paths import INSTANCES, SWE
from trialbook.verify.grading import grade_test_log, parse_status_map

LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"


def _instances() -> dict[str, dict]:
    out = {}
    with INSTANCES.open() as fh:
        for line in fh:
            obj = json.loads(line)
            out[obj["instance_id"]] = obj
    return out


def _lists(inst: dict) -> tuple[list[str], list[str]]:
    f2p, p2p = inst["FAIL_TO_PASS"], inst["PASS_TO_PASS"]
    return (json.loads(f2p) if isinstance(f2p, str) else f2p), (json.loads(p2p) if isinstance(p2p, str) else p2p)


REPORTED = sorted(p.parent.name for p in LOGS.glob("*/report.json"))


def test_real_logs_are_present():
    assert len(REPORTED) >= 40  # the shared data has 47 instances with an official report.json


@pytest.mark.parametrize("instance_id", REPORTED)
def test_grade_matches_official_report(instance_id: str):
    inst = _instances()[instance_id]
    f2p, p2p = _lists(inst)
    report = json.loads((LOGS / instance_id / "report.json").read_text())[instance_id]
    log = (LOGS / instance_id / "test_output.txt").read_text(errors="replace")
    grade = grade_test_log(log, inst["repo"], f2p, p2p, task_id=instance_id)
    assert grade.resolved == report["resolved"]
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        official = report["tests_status"][group]
        mine = grade.tests[group]
        assert {t for t, s in mine.items() if s == "pass"} == set(official["success"])
        assert {t for t, s in mine.items() if s in ("fail", "error", "missing")} == set(official["failure"])


def test_sphinx_ansi_colour_codes_are_parsed():
    # The official sphinx logs colour the short summary: FAILED and the test name carry escapes.
    instance_id = "sphinx-doc__sphinx-10323"
    log = (LOGS / instance_id / "test_output.txt").read_text()
    assert "\x1b[31mFAILED" in log
    f2p, p2p = _lists(_instances()[instance_id])
    grade = grade_test_log(log, "sphinx-doc/sphinx", f2p, p2p)
    assert grade.tests["FAIL_TO_PASS"] == {f2p[0]: "fail"}  # seen as FAILED, not missing
    assert grade.parsed == 2  # only the two FAILED summary lines: the run lacked -rA
    p2p_status = list(grade.tests["PASS_TO_PASS"].values())
    assert p2p_status.count("fail") == 1 and p2p_status.count("missing") == len(p2p) - 1
    assert not grade.p2p_regression  # F2P failed too


LOG_WITH_MARKERS = """\
PASSED tests/test_a.py::test_outside_markers
+ : '>>>>> Start Test Output'
PASSED tests/test_a.py::test_fix
PASSED tests/test_a.py::test_keep
FAILED tests/test_a.py::test_other - AssertionError
SKIPPED [1] tests/test_a.py:9: no network
+ : '>>>>> End Test Output'
"""


def test_markers_limit_the_parsed_section_and_missing_counts_as_failed():
    grade = grade_test_log(
        LOG_WITH_MARKERS,
        "pytest-dev/pytest",
        ["tests/test_a.py::test_fix"],
        ["tests/test_a.py::test_keep", "tests/test_a.py::test_outside_markers"],
    )
    assert grade.tests["PASS_TO_PASS"]["tests/test_a.py::test_outside_markers"] == "missing"
    assert not grade.resolved
    assert grade.p2p_regression
    assert grade.parsed == 4  # PASSED x2, FAILED, SKIPPED between the markers


def test_p2p_failure_is_a_regression_and_error_is_kept():
    log = "PASSED t.py::test_fix\nERROR t.py::test_keep - fixture\n"
    grade = grade_test_log(log, "pytest-dev/pytest", ["t.py::test_fix"], ["t.py::test_keep"])
    assert grade.tests == {"FAIL_TO_PASS": {"t.py::test_fix": "pass"}, "PASS_TO_PASS": {"t.py::test_keep": "error"}}
    assert grade.p2p_regression and not grade.resolved
    both = "PASSED t.py::test_fix\nPASSED t.py::test_keep\n"
    ok = grade_test_log(both, None, ["t.py::test_fix"], ["t.py::test_keep"])
    assert ok.resolved and not ok.p2p_regression


@pytest.mark.parametrize(
    "marker, name",
    [(">>>>> Patch Apply Failed", "patch_apply_failed"), (">>>>> Tests Timed Out", "tests_timed_out")],
)
def test_harness_failure_markers_mean_no_valid_run(marker: str, name: str):
    log = f"PASSED t.py::test_fix\n{marker}\n"
    grade = grade_test_log(log, "pytest-dev/pytest", ["t.py::test_fix"], [])
    assert grade.marker == name
    assert not grade.resolved
    assert grade.tests["FAIL_TO_PASS"] == {"t.py::test_fix": "missing"}


def test_django_log_format_uses_the_django_parser():
    log = (
        "test_fix (app.tests.FixTest) ... ok\n"
        "test_keep (app.tests.KeepTest) ... FAIL\n"
        "----------------------------------------------------------------------\n"
    )
    grade = grade_test_log(log, "django/django", ["test_fix (app.tests.FixTest)"], ["test_keep (app.tests.KeepTest)"])
    assert grade.tests["FAIL_TO_PASS"]["test_fix (app.tests.FixTest)"] == "pass"
    assert grade.tests["PASS_TO_PASS"]["test_keep (app.tests.KeepTest)"] == "fail"
    assert grade.p2p_regression


def test_skipped_counts_neither_way_as_in_the_official_harness():
    log = "PASSED t.py::test_fix\nSKIPPED t.py::test_keep\n"
    grade = grade_test_log(log, "pytest-dev/pytest", ["t.py::test_fix"], ["t.py::test_keep"])
    assert grade.tests["PASS_TO_PASS"] == {"t.py::test_keep": "skipped"}
    assert grade.resolved


def test_unknown_repo_reads_pytest_output():
    log = "PASSED tests/test_x.py::test_a\nFAILED tests/test_x.py::test_b - assert 0\n"
    grade = grade_test_log(log, "examples/local", ["tests/test_x.py::test_a"], ["tests/test_x.py::test_b"])
    assert grade.tests["PASS_TO_PASS"]["tests/test_x.py::test_b"] == "fail"
    assert grade.parsed == 2


ALL_LOGS = sorted(p.parent.name for p in LOGS.glob("*/test_output.txt"))


@pytest.mark.parametrize("instance_id", ALL_LOGS)
def test_line_prefilter_gives_the_parser_the_same_status_map(instance_id: str):
    log = (LOGS / instance_id / "test_output.txt").read_text(errors="replace")
    repo = _instances()[instance_id]["repo"]
    assert parse_status_map(log, repo, fast=True) == parse_status_map(log, repo, fast=False)


def test_line_prefilter_keeps_coloured_and_trailing_status_lines():
    log = (
        "\x1b[32mPASSED\x1b[0m tests/a.py::test_one\r\n"
        "tests/a.py::test_two PASSED\n"
        "noise line\n"
        "\x1b[31mFAILED\x1b[0m tests/a.py::\x1b[1mtest_three\x1b[0m - assert 0\n"
        "tests/a.py::test_four \x1b[33mSKIPPED\x1b[0m\n"
    )
    for repo in ("sphinx-doc/sphinx", "pytest-dev/pytest", "psf/requests", "matplotlib/matplotlib", None):
        fast = parse_status_map(log, repo, fast=True)
        assert fast == parse_status_map(log, repo, fast=False)
    assert parse_status_map(log, "sphinx-doc/sphinx")[0] == {
        "tests/a.py::test_one": "PASSED",
        "tests/a.py::test_two": "PASSED",
        "tests/a.py::test_three": "FAILED",
        "tests/a.py::test_four": "SKIPPED",
    }

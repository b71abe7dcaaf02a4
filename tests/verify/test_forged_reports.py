"""The change under test runs inside the test process: what it prints must not grade it.

Two forgeries seen resolved before this rule (tests/harness/cheats/atexit_passed_lines.sh and
forged_marker.sh, run for real in tests/harness/test_cheaters.py): PASSED lines after pytest's own
FAILED line (swebench's parsers keep a test's last report), and the verifier's marker, read from /proc,
printed early so the real test output was cut off as "reward files"; and a third found with them: a
flood of output that pushed pytest's FAILED line out of the exec's in-memory tail before printing PASSED
lines. Here the rules by hand and on the official logs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import INSTANCES, SWE, TEST_DATA
from trialbook.verify.grading import grade_test_log, parse_log, parse_status_map, status_lines
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
    assert _split(output, mark) == (output, {}, None)  # None: the script never reached its end


INSTANCES_BY_ID = {i["instance_id"]: i for i in map(json.loads, INSTANCES.read_text().splitlines())}
ALL_LOGS = sorted((SWE / "logs" / "20240620_sweagent_claude3.5sonnet").glob("*/test_output.txt"))


@pytest.mark.parametrize("path", ALL_LOGS, ids=lambda p: p.parent.name)
def test_the_status_lines_of_a_big_log_grade_as_the_whole_log(path: Path) -> None:
    # a log bigger than an exec's in-memory tail is graded from the lines status_lines keeps: on every
    # official log (django's and seaborn's parsers keep every line) the result is the whole log's
    repo = INSTANCES_BY_ID[path.parent.name]["repo"]
    whole = path.read_text(errors="replace")
    with path.open("rb") as fh:
        kept = status_lines(fh, repo)
    assert parse_log(kept, repo, path.parent.name) == parse_log(whole, repo, path.parent.name)
    assert len(kept) <= len(whole)


@pytest.mark.parametrize("repo", ["pytest-dev/pytest", "example/local", None])
def test_a_flood_cannot_push_the_real_failure_out_of_the_graded_lines(tmp_path: Path, repo: str | None) -> None:
    mark = "@@trialbook-abc@@ "
    flooded = REAL + ("." * 1023 + "\n") * 5000 + "PASSED t.py::fix\n" + f"\n{mark}end 0\n\n{mark}reward.txt\n1\n"
    (tmp_path / "out").write_bytes(b"\xff\xfe not utf-8\n" + flooded.encode())
    with (tmp_path / "out").open("rb") as fh:
        text = _split(status_lines(fh, repo, (mark,)), mark)[0]
    assert text == REAL.replace("t.py .F\n", "").replace("==== 1 failed, 1 passed in 0.01s ====\n", "") + (
        "PASSED t.py::fix"
    )  # the status lines only: no flood, no undecodable line, no summary
    assert grade_test_log(text, repo, F2P, P2P).conflicts == F2P


REAL_7490 = TEST_DATA / "verifier-logs" / "pytest-dev__pytest-7490.gold.status.txt"


def test_a_conflict_of_a_test_no_list_grades_is_not_reported() -> None:
    # trialbook's own run of the gold patch of a real instance (status lines of its log, made here with
    # status_lines): pytest's suite runs pytest on generated files and prints those runs' reports, so an inner
    # `test_this` is reported XFAIL in one and FAILED in another. Graded tests and the canary keep the rule.
    instance = INSTANCES_BY_ID["pytest-dev__pytest-7490"]
    f2p, p2p = (json.loads(instance[k]) if isinstance(instance[k], str) else instance[k]
                for k in ("FAIL_TO_PASS", "PASS_TO_PASS"))  # fmt: skip
    log = REAL_7490.read_text()
    inner = "test_xfail_imperative_in_setup_function.py::test_this"
    assert parse_log(log, instance["repo"]).conflicts == [inner]
    grade = grade_test_log(log, instance["repo"], f2p, p2p, canary="test_fc2a8ea26b1e")
    assert (grade.resolved, grade.conflicts, grade.canary) == (True, [], "failed")
    # the same forgery on a graded test, and on the canary, is still named and graded by its failing report
    graded = f2p[0]
    printed = f"PASSED {graded}\nPASSED testing/test_skipping.py::test_fc2a8ea26b1e\n"  # after pytest's report
    end = "+ : '>>>>> End Test Output'"
    forged = log.replace(f"PASSED {graded}", f"FAILED {graded}").replace(end, printed + end)
    grade = grade_test_log(forged, instance["repo"], f2p, p2p, canary="test_fc2a8ea26b1e")
    # a canary reported passing once passed, whatever else the log prints of it: FAILED lines printed for every name
    # a canary could take must not outvote the runner's PASSED (issue 55, class 3); a PASSED line forged for it
    # only costs the forger
    assert (grade.resolved, grade.canary) == (False, "passed")
    assert grade.conflicts == sorted([graded, "testing/test_skipping.py::test_fc2a8ea26b1e"])

"""Segment markers sealed with the run's nonces (verify/markers.py): the graded segment is the harness's, and a marker
the code under test printed, with no nonce or a wrong one, is read as no marker and grades 0 (`markers_forged`).
The same forgeries run for real inside a sandbox in tests/verify/test_attacks_grading.py (forged_end_marker,
forged_segment_at_exit, forged_sealed_marker)."""

from __future__ import annotations

from trialbook.verify.grading import forged_markers, grade_test_log, parse_log
from trialbook.verify.markers import END, START, Seal, seal, segment

SEAL = Seal("0123456789abcdef", "fedcba9876543210")
F2P, P2P = ["t.py::fix"], ["t.py::keep"]
REAL = "FAILED t.py::fix - assert 3 == 2.5\nPASSED t.py::keep\n==== 1 failed, 1 passed in 0.01s ====\n"
SCRIPT = f"""#!/bin/bash
set -x
git apply - <<'EOF'
+print('{START}')
EOF
: '{START}'
pytest -rA t.py
: '{END}'
"""


def _log(body: str, s: Seal = SEAL) -> str:
    return f"+ git apply -\n+ : '{START} {s.start}'\n+ pytest -rA t.py\n{body}+ : '{END} {s.end}'\n"


def test_seal_appends_each_nonce_outside_heredocs_only() -> None:
    sealed, found = seal(SCRIPT, SEAL)
    assert found
    assert f": '{START} {SEAL.start}'" in sealed and f": '{END} {SEAL.end}'" in sealed
    assert f"+print('{START}')" in sealed  # the test patch's text is data
    assert seal("pytest t.py\n", SEAL) == ("pytest t.py\n", False)  # no markers: unchanged, read whole


def test_fresh_seals_differ_and_survive_the_record() -> None:
    a, b = Seal.fresh(), Seal.fresh()
    assert len({a.start, a.end, b.start, b.end}) == 4
    assert Seal.from_record(a.as_record()) == a
    assert Seal.from_record({"start": "x", "end": a.end}) is None and Seal.from_record(None) is None


def test_an_honest_sealed_log_grades_its_segment() -> None:
    fixed = REAL.replace("FAILED t.py::fix - assert 3 == 2.5", "PASSED t.py::fix").replace("1 failed, 2", "2")
    log = "PASSED t.py::fix\n" + _log(fixed)  # a status line before the segment is not read
    text, forged = segment(log, SEAL)
    assert (text, forged) == ("+ pytest -rA t.py\n" + fixed + "+ : '", False)
    grade = grade_test_log(log, "pytest-dev/pytest", F2P, P2P, seal=SEAL)
    assert (grade.strict, grade.markers_forged) == (True, False)
    failing = grade_test_log(_log(REAL), "pytest-dev/pytest", F2P, P2P, seal=SEAL)
    assert (failing.strict, failing.tests["FAIL_TO_PASS"]) == (False, {"t.py::fix": "fail"})


def test_an_unsealed_end_marker_printed_early_neither_ends_the_segment_nor_grades() -> None:
    # the code under test prints a plain end marker then passes; pytest's real report follows
    body = f"PASSED t.py::fix\nPASSED t.py::keep\n{END}\n" + REAL
    grade = grade_test_log(_log(body), "pytest-dev/pytest", F2P, P2P, seal=SEAL)
    assert grade.markers_forged and not grade.strict
    assert parse_log(_log(body), "pytest-dev/pytest", seal=SEAL).status_map["t.py::fix"] == "FAILED"


def test_a_marker_with_the_start_nonce_or_a_guess_is_forged() -> None:
    # the start nonce can be read back (a log file tee writes); the end nonce cannot: using the start's is a forgery
    for nonce in (SEAL.start, "0" * 16, ""):
        body = f"PASSED t.py::fix\nPASSED t.py::keep\n{END} {nonce}\n" + REAL
        assert forged_markers(_log(body), SEAL), nonce
        assert not grade_test_log(_log(body), "pytest-dev/pytest", F2P, P2P, seal=SEAL).strict


def test_a_whole_forged_segment_at_exit_is_not_read() -> None:
    forged_segment = f"{START}\nPASSED t.py::fix\nPASSED t.py::keep\n{END}\n"
    log = _log(REAL) + forged_segment  # printed after the harness's end marker (the process outlived it)
    assert segment(log, SEAL)[1] is True
    assert parse_log(log, "pytest-dev/pytest", seal=SEAL).status_map["t.py::fix"] == "FAILED"


def test_a_sealed_run_without_markers_in_its_script_counts_any_marker_as_forged() -> None:
    # test.sh had no markers (not sealed): a pair the code under test prints would otherwise be the whole segment
    log = f"{START}\nPASSED t.py::fix\nPASSED t.py::keep\n{END}\n{REAL}"
    assert parse_log(log, "pytest-dev/pytest", seal=SEAL).status_map["t.py::fix"] == "FAILED"
    grade = grade_test_log(log, "pytest-dev/pytest", F2P, P2P, seal=SEAL)
    assert grade.markers_forged and not grade.strict
    assert not forged_markers(REAL, SEAL)


def test_a_log_of_another_harness_reads_as_before() -> None:
    log = f"+ : '{START}'\n{REAL}+ : '{END}'\n"
    assert forged_markers(log) is False
    assert parse_log(log, "pytest-dev/pytest").status_map["t.py::fix"] == "FAILED"

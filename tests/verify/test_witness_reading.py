"""The witness's reading of its canaries (verify/runner.witness_reading), on real pytest runs of the plain-bugfix
example with canaries planted: every channel read (whole result lines of the text log, the junit report and the exit
status), none trusted alone. A suffix on each summary line had made a reading of the lines that name a canary take a
passing canary for a failing one (`PASSED <canary> - no ERROR`); a junit report removed or emptied is no reading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fixedtree import fixed_tree, planted_pytest
from paths import EXAMPLES
from trialbook.verify.onerun import _result_line, witness_reading
from trialbook.verify.privilege import Reading

EXAMPLE = EXAMPLES / "plain-bugfix"
EXISTING = {"test_mean", "test_median_odd", "test_median_even"}
SUFFIX = """
import sys as _sys

if "_pytest.python" in _sys.modules and "_pytest.terminal" in _sys.modules:
    _sys.modules["_pytest.python"].Function.runtest = lambda self: None
    _T = _sys.modules["_pytest.terminal"]
    _line = _T._get_line_with_reprcrash_message
    _T._get_line_with_reprcrash_message = lambda *a, **k: _line(*a, **k) + " - no ERROR"
"""
# the same, the suffix without a separator: the line is then no result line at all
BARE_SUFFIX = SUFFIX.replace('" - no ERROR"', '" FAILED"')
NOOP = """
import sys as _sys

if "_pytest.python" in _sys.modules:
    _sys.modules["_pytest.python"].Function.runtest = lambda self: None
"""


def _run(tmp: Path, cheat: str, seed: int) -> tuple[str, str, Reading]:
    """A fixed tree with `cheat` appended to its module, canaries planted, pytest run with a junit report: (the
    canaries' names, the text log, the reading of the report and exit status)."""
    tree = fixed_tree(tmp / f"tree-{seed}", cheat)
    command = f"{sys.executable} -m pytest -rA -p no:cacheprovider --junitxml=j.xml tests/test_stats.py\n"
    planted = planted_pytest(command, EXISTING, seed)
    res = subprocess.run(["bash", "-c", planted.script], cwd=tree, capture_output=True, text=True, timeout=120)
    junit = tree / "j.xml"
    report = junit.read_text() if junit.exists() else None
    return planted.name, res.stdout, Reading(reports=[report], report_exits=[res.returncode])


@pytest.mark.parametrize("seed", [0, 1])
def test_a_suffix_on_summary_lines_reads_passed_and_a_missing_report_reads_missing(tmp_path: Path, seed: int) -> None:
    name, log, reading = _run(tmp_path / "honest", "", seed)
    assert witness_reading(log, reading, name) == "failed"  # the honest fix: every canary fails in every channel
    name, log, reading = _run(tmp_path / "suffix", SUFFIX, seed)
    assert " - no ERROR" in log  # a word anywhere on the line bent the old reader (any word on a line naming it)
    assert witness_reading(log, reading, name) == "passed"
    assert witness_reading(log, Reading(), name) == "passed"  # the text log alone reads the whole line's status
    name, log, reading = _run(tmp_path / "bare", BARE_SUFFIX, seed)
    assert witness_reading(log, Reading(), name) == "missing"  # no whole result line names a canary: none read
    assert witness_reading(log, reading, name) == "passed"  # its junit report says the canaries passed
    # the runner subverted, its text log rewritten to read FAILED for each canary: the report and exit status disagree
    name, log, reading = _run(tmp_path / "noop", NOOP, seed)
    forged = log.replace("PASSED tests/", "FAILED tests/")
    assert witness_reading(forged, Reading(), name) == "failed"
    assert witness_reading(forged, reading, name) == "passed"
    # an honest run whose report is removed or emptied, or whose exit status says success: never "failed"
    name, log, reading = _run(tmp_path / "again", "", seed)
    assert witness_reading(log, Reading(reports=[None], report_exits=[1]), name) == "missing"
    assert witness_reading(log, Reading(reports=[""], report_exits=[1]), name) == "missing"
    assert witness_reading(log, Reading(reports=reading.reports, report_exits=[0]), name) == "passed"


def test_result_lines_are_whole_lines() -> None:
    assert _result_line("FAILED tests/t.py::test_a_x - assert [1] == [2]") == ("failed", "test_a_x")
    assert _result_line("PASSED tests/t.py::test_a_x - FAILED") == ("passed", "test_a_x")
    assert _result_line("tests/t.py::T::test_a_x[1-2] FAILED   [ 50%]") == ("failed", "test_a_x")
    assert _result_line("test_a_x (m.T.test_a_x) ... ok") == ("passed", "test_a_x")
    assert _result_line("FAIL: test_a_x (m.T.test_a_x)") == ("failed", "test_a_x")
    for bent in ("PASSED tests/t.py::test_a_x FAILED", "tests/t.py::test_a_x PASSED FAILED", "test_a_x (m.T) ... ok 1"):
        assert _result_line(bent) is None, bent

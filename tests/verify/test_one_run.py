"""A reward-file task's one run (verify/onerun.py): the status root gives test.sh of a pytest run holding planted tests
(privilege.SHOWN, the shell's builtins) and the harness's reading of the same report (onerun.shown_status) agree on
real pytest reports, and on forged ones neither ever gives 0 where the other does not; the planted tests' names are
in the staged test.sh only. The trials themselves: tests/verify/test_attacks_grading.py (the reward-file shapes,
the honest fix's planted tests read failing in its own graded run) and test_witness_alongside.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trialbook.tasks.testscript import TestScript
from trialbook.verify.onerun import shown_status
from trialbook.verify.privilege import SHOWN, separate

MODULE = """import pytest


class TestK:
    def test_k_ab(self):
        assert 1 == KAB


def test_a():
    assert 1 == A


@pytest.mark.parametrize("v", [1, 2])
def test_p_cd(v):
    assert v <= PCD


@pytest.mark.xfail
def test_x():
    assert 0


def test_s():
    pytest.skip("no")
"""
PLANTED = "test_k_ab,test_p_cd"


def _shell(status: int, report: Path, planted: str) -> int:
    """The status SHOWN gives test.sh, run by bash as the staged test.sh runs it."""
    names = " ".join(planted.split(","))
    script = f"set -euo pipefail\n__tb_planted=' {names} '\n{SHOWN}\n__tb_shown {status} {report}\necho $__tb_s\n"
    return int(subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout)


def _report(tmp_path: Path, kab: int, a: int, pcd: int) -> tuple[int, Path]:
    """A real pytest run of MODULE (test_k_ab and test_a pass with 1, each case of test_p_cd up to `pcd`)."""
    (tmp_path / "test_m.py").write_text(MODULE.replace("KAB", str(kab)).replace("PCD", str(pcd)).replace("A", str(a)))
    report = tmp_path / "junit.xml"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}", "test_m.py"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    return done.returncode, report


@pytest.mark.parametrize(
    ("kab", "a", "pcd", "shown"),
    [
        (2, 1, 0, 0),  # only the planted tests fail (every case of the parametrized one): the run passes for test.sh
        (2, 2, 0, 1),  # a real test fails too
        (1, 1, 0, 1),  # a planted test passes (a runner made to pass what fails): the run's own status
        (2, 1, 1, 1),  # one case of a planted test passes
        (1, 1, 2, 0),  # nothing fails: pytest's own 0
    ],
)
def test_root_and_the_harness_read_a_real_report_alike(tmp_path: Path, kab: int, a: int, pcd: int, shown: int) -> None:
    status, report = _report(tmp_path, kab, a, pcd)
    assert status in (0, 1)
    assert _shell(status, report, PLANTED) == shown_status(status, report.read_text(), PLANTED) == shown
    # no planted test: the status as it is, whatever the report says
    assert _shell(status, report, "") == shown_status(status, report.read_text(), "") == status


CASE = '<testcase classname="t" name="{}" time="0.1">{}</testcase>'
FAIL = '<failure message="x">tb</failure>'


def _suite(*cases: str) -> str:
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">'
        + "".join(cases)
        + ("</testsuite></testsuites>")
    )


FORGED = {
    "a planted failure and a real failure in a comment": _suite(CASE.format("test_k_ab", FAIL), "<!-- x -->"),
    "a real failure in a CDATA section": _suite(CASE.format("test_k_ab", FAIL), CASE.format("test_a", "<![CDATA[x]]>")),
    "a planted name in single quotes": _suite("<testcase classname='t' name='test_k_ab'>" + FAIL + "</testcase>"),
    "a testcase left open": _suite(CASE.format("test_k_ab", FAIL), '<testcase name="test_a"><failure/>'),
    "nested testcases": _suite(CASE.format("test_k_ab", CASE.format("test_a", FAIL))),
    "no planted test": _suite(CASE.format("test_a", "")),
    "not XML": '<testcase name="test_k_ab"><failure>',
    "an empty report": "",
    "a failure outside any testcase": _suite(FAIL, CASE.format("test_k_ab", FAIL)),
    "the name attribute twice": _suite('<testcase name="test_a" name="test_k_ab">' + FAIL + "</testcase>"),
    "a name inside another attribute": _suite('<testcase classname="t name=&quot;x" name="test_a"/>'),
    "an error element": _suite(CASE.format("test_k_ab", '<error message="e"/>'), CASE.format("test_a", "")),
}


@pytest.mark.parametrize("forgery", sorted(FORGED))
def test_a_forged_report_is_never_read_as_passing_by_one_reader_alone(tmp_path: Path, forgery: str) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(FORGED[forgery])
    shell, harness = _shell(1, report, PLANTED), shown_status(1, FORGED[forgery], PLANTED)
    # the verifier grades 0 where they differ (runner.status_forged): no report makes test.sh see 0 unnoticed
    assert shell == harness or shell != 0, (shell, harness)
    if forgery in ("an error element", "a failure outside any testcase"):  # what an honest run's report could say
        assert shell == harness == 0
    elif forgery != "a name inside another attribute":
        assert shell == 1, forgery


def test_the_planted_names_are_in_the_staged_script_only() -> None:
    script = "#!/bin/bash\ncd /testbed\npython3 -m pytest -rA tests/test_m.py; rc=$?\necho $rc\n"
    staged = separate(TestScript.parse(script), "n0nce", ("test_k_ab", "test_p_cd", "bad name; rm -rf /")).script
    assert "__tb_planted=' test_k_ab test_p_cd '" in staged and "bad name" not in staged
    # never exported (the tests' uid reads no root process's environment) nor on a command line
    assert (
        "export __tb_planted" not in staged
        and "__tb_planted" not in staged.split("__tb_shown() {")[0].split("__tb_planted=")[0]
    )
    assert "__tb_planted=''" in separate(TestScript.parse(script), "n0nce").script

"""Cross-checked channels (verify/channels.py): a pytest run's exit status, its text log and its junit report agree, or
the trial grades 0 (`channels_disagree`). The rules by hand, then the staged test.sh's function run for real as root
on this machine (a real pytest as the tests' uid, its report read back through the markers); inside a sandbox the
same forgeries run in tests/verify/test_attacks_grading.py (summary_rewrite, atexit_exit0)."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from trialbook.tasks.testscript import TestScript
from trialbook.verify.channels import REPORT_LIMIT, canary_in_reports, disagreement, junit_key, parse_junit
from trialbook.verify.grading import grade_test_log
from trialbook.verify.privilege import read_markers, separate

F2P, P2P = ["t_test.py::test_fix"], ["t_test.py::TestKeep::test_keep[1]"]
JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" failures="1">'
    '<testcase classname="t_test" name="test_fix" time="0.001"><failure message="assert 1 == 2">tb</failure>'
    '</testcase><testcase classname="t_test.TestKeep" name="test_keep[1]" time="0.001" />'
    '<testcase classname="t_test" name="test_xf" time="0.001"><skipped type="pytest.xfail" message="x" /></testcase>'
    "</testsuite></testsuites>"
)
PASSING = {F2P[0]: "PASSED", P2P[0]: "PASSED"}


def test_a_node_id_reads_as_pytest_writes_it_in_junit() -> None:
    assert junit_key("tests/test_a.py::TestX::test_b[1-2]") == "tests.test_a.TestX::test_b[1-2]"
    assert junit_key("t_test.py::test_fix") == "t_test::test_fix"
    assert junit_key("a/b.py::C::()::test_d") == "a.b.C::test_d"
    # a parameter id holding `::` and `/` (requests-5414's IPv6 URL) is the testcase name's, untouched: read as a
    # path, an honest run's passing test went missing from the junit side and the run was graded 0
    ipv6 = "tests/test_requests.py::TestRequests::test_errors[http://fe80::5054:ff:fe5a:fc0-InvalidURL]"
    assert junit_key(ipv6) == "tests.test_requests.TestRequests::test_errors[http://fe80::5054:ff:fe5a:fc0-InvalidURL]"


def test_a_report_is_read_per_testcase_and_an_unsafe_one_not_at_all() -> None:
    assert parse_junit(JUNIT) == {
        "t_test::test_fix": "failed",
        "t_test.TestKeep::test_keep[1]": "passed",
        "t_test::test_xf": "xfail",
    }
    for bad in ("", "<testsuites", '<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>', JUNIT + " " * REPORT_LIMIT):
        assert parse_junit(bad) is None


def test_the_three_channels_must_agree() -> None:
    # the text log says every graded test passed, the report says the F2P test failed
    assert "t_test.py::test_fix PASSED" in str(disagreement([JUNIT], [1], PASSING, F2P + P2P, True))
    # exit status 0 (an os._exit at exit) while the report holds a failure
    failing = {F2P[0]: "FAILED", P2P[0]: "PASSED"}
    assert "exited 0" in str(disagreement([JUNIT], [0], failing, F2P + P2P, False))
    # a report that should exist does not (the code under test removed it) while the text log would resolve
    assert "missing" in str(disagreement([None], [0], PASSING, F2P + P2P, True))
    # agreement: the honest failing run, no report asked for, an XFAIL matching the report's xfail
    assert disagreement([JUNIT], [1], failing, F2P + P2P, False) is None
    assert disagreement([], [], PASSING, F2P + P2P, True) is None
    assert disagreement([None], [1], failing, F2P + P2P, False) is None
    assert disagreement([JUNIT], [1], {"t_test.py::test_xf": "XFAIL"}, ["t_test.py::test_xf"], False) is None
    # a test the report does not have at all, reported passing in the text log
    assert "does not have it" in str(
        disagreement([JUNIT], [1], {"t_test.py::test_new": "PASSED"}, ["t_test.py::test_new"], True)
    )


def test_every_channel_accounts_for_every_test_whatever_the_exit_status() -> None:
    # issue 55, class 3: the exit status is compared both ways, an empty report is no report
    passing_report = JUNIT.replace('<failure message="assert 1 == 2">tb</failure>', "")
    assert disagreement([passing_report], [0], PASSING, F2P + P2P, True) is None
    assert "exited 1 while its junit report holds no failure" in str(
        disagreement([passing_report], [1], PASSING, F2P + P2P, True)
    )
    empty = '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" /></testsuites>'
    assert "holds no test" in str(disagreement([empty], [0], PASSING, F2P + P2P, True))
    # a run that does not resolve is not called a disagreement for it (its grade is 0 anyway)
    assert disagreement([empty], [1], {F2P[0]: "FAILED"}, F2P + P2P, False) is None


def test_the_canaries_are_read_from_the_junit_report_too() -> None:
    report = JUNIT.replace('name="test_fix"', 'name="test_fix_edge"')
    assert canary_in_reports([report], "test_fix_edge") == "failed"
    assert canary_in_reports([report], "test_keep,test_fix_edge") == "passed"  # test_keep[1] passed
    assert canary_in_reports([report], "test_other") == "missing"
    assert canary_in_reports([None], "test_fix_edge") is None


def test_report_sections_are_taken_out_of_the_log() -> None:
    m = "@@trialbook-tests-secret@@"
    log = (
        f"a\n{m} start setpriv\nPASSED x\n{m} left 0\n{m} report 1\n<testsuites>\n</testsuites>\n{m} report-end\n"
        f"{m} end 1 setpriv\n{m} start setpriv\n{m} report 0\n\n{m} report-missing\n{m} end 0 setpriv\nb"
    )
    kept, reading = read_markers(log, "secret")
    assert kept == "a\nPASSED x\nb"
    assert (reading.reports, reading.report_exits) == (["<testsuites>\n</testsuites>", None], [1, 0])


# ---- for real: the staged function as root, pytest as the tests' uid, in a container of the base image --------------
IMAGE = "trialbook-base:bookworm"
TEST_FILE = """import mod  # noqa: F401


def test_fix():
    assert 1 == EXPECTED


def test_keep():
    assert True
"""
# the code under test: a module the tests import, forging one channel
SUMMARY = (
    "import sys\nif '_pytest.terminal' in sys.modules:\n    T = sys.modules['_pytest.terminal']\n"
    "    f = T._get_line_with_reprcrash_message\n"
    "    T._get_line_with_reprcrash_message = lambda c, rep, *a: f'PASSED {rep.nodeid}' if 'fix' in rep.nodeid"
    " else f(c, rep, *a)\n"
)
FORGERIES = {
    "honest": "",
    "summary": SUMMARY,
    "exit0": "import atexit, os, sys\natexit.register(lambda: (sys.stdout.flush(), os._exit(0)))\n",
    # the summary forged, and the report (its path is in the environment) removed at exit
    "remove": SUMMARY
    + (
        "import atexit, os, re\ndef _gone():\n"
        "    p = re.search(r'--junitxml=(\\S+)', os.environ.get('PYTEST_ADDOPTS', ''))\n"
        "    p and os.path.exists(p.group(1)) and os.remove(p.group(1))\natexit.register(_gone)\n"
    ),
}


def _run(forgery: str) -> tuple[str | None, str]:
    tests = TEST_FILE.replace("EXPECTED", "1" if forgery == "honest" else "2")
    body = "cd /repo\npython3 -m pytest -rA -p no:cacheprovider t_test.py\n"
    staged = separate(TestScript.parse(f"#!/bin/bash\n{body}"), "n0nce").script
    setup = (
        f"mkdir -p /repo && cd /repo && git init -q . && printf %s {shlex.quote(FORGERIES[forgery])} > mod.py && "
        f"printf %s {shlex.quote(tests)} > t_test.py && printf %s {shlex.quote(staged)} > /t.sh && bash /t.sh"
    )
    out = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "--label",
            "trialbook.test=channels",
            IMAGE,
            "bash",
            "-c",
            setup,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    log, reading = read_markers(out.stdout, "n0nce")
    assert reading.how == ["setpriv"] and "t_test.py" in log, out.stdout + out.stderr
    graded = ["t_test.py::test_fix", "t_test.py::test_keep"]
    grade = grade_test_log(log, None, graded[:1], graded[1:])
    return disagreement(reading.reports, reading.report_exits, grade.statuses, graded, grade.strict), log


@pytest.mark.docker
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_a_real_pytest_run_agrees_only_when_honest(forgery: str) -> None:
    why, log = _run(forgery)
    assert (why is None) is (forgery == "honest"), (why, log)
    if forgery == "summary":
        assert "PASSED t_test.py::test_fix" in log and "the junit report failed" in str(why)
    if forgery == "exit0":
        assert "exited 0" in str(why)
    if forgery == "remove":
        assert "missing" in str(why)


def test_a_parameter_id_a_log_parser_shortened_is_found_by_its_tail() -> None:
    # psf__requests-6028's P2P names `[/test_utils.py]`; pytest's junit has `[/testbed/tests/test_utils.py]`
    junit = (
        '<testsuites><testsuite><testcase classname="tests.test_utils.TestZ"'
        ' name="test_u[/testbed/tests/test_utils.py]" /><testcase classname="tests.test_utils.TestZ"'
        ' name="test_u[/etc/invalid/location]"><failure>x</failure>'
        "</testcase></testsuite></testsuites>"
    )
    short = "tests/test_utils.py::TestZ::test_u[/test_utils.py]"
    failing = "tests/test_utils.py::TestZ::test_u[/location]"
    assert disagreement([junit], [1], {short: "PASSED"}, [short], True) is None
    # the same shortening cannot hide a failure: the tail matches a failing testcase
    assert "failed" in str(disagreement([junit], [1], {failing: "PASSED"}, [failing], True))
    # a parameter id cut at its first space
    junit2 = junit.replace("test_u[/testbed/tests/test_utils.py]", "test_u[&lt;meta charset=x&gt;]")
    cut = "tests/test_utils.py::TestZ::test_u[<meta"
    assert disagreement([junit2], [1], {cut: "PASSED"}, [cut], True) is None
    # nor a test of another function or a tail that matches nothing
    other = "tests/test_utils.py::TestZ::test_v[/test_utils.py]"
    assert "does not have it" in str(disagreement([junit], [1], {other: "PASSED"}, [other], True))


def test_a_parameter_id_cut_right_after_its_bracket_reads_every_case_of_that_function() -> None:
    # pytest-7324's `test_syntax_oddeties[    true           ]`: swebench's parser keeps `test_syntax_oddeties[`, which
    # an honest oracle run passed and the channels check read as absent from the junit report (graded 0)
    junit = (
        '<testsuites><testsuite><testcase classname="testing.test_mark_expression"'
        ' name="test_syntax_oddeties[    true           ]" /><testcase classname="testing.test_mark_expression"'
        ' name="test_syntax_oddeties[(      true     )]" /></testsuite></testsuites>'
    )
    cut = "testing/test_mark_expression.py::test_syntax_oddeties["
    assert disagreement([junit], [0], {cut: "PASSED"}, [cut], True) is None
    # one failing case among them: the cut id is failing (it hides no failure)
    failing = junit.replace('(      true     )]" />', '(      true     )]"><failure>x</failure></testcase>')
    assert "the junit report failed" in str(disagreement([failing], [1], {cut: "PASSED"}, [cut], True))
    # another function's cases are not read for it
    other = "testing/test_mark_expression.py::test_basic["
    assert "does not have it" in str(disagreement([junit], [0], {other: "PASSED"}, [other], True))


def test_a_listed_name_that_is_no_node_id_is_not_looked_for_in_the_junit_report() -> None:
    # pytest-7521's PASS_TO_PASS holds `[100%]` (swebench's parser read it off a progress line): no testcase can
    # have that name, so an honest run was graded 0 for its absence; real node ids are still checked beside it
    junit = '<testsuites><testsuite><testcase classname="t_test" name="test_a" /></testsuite></testsuites>'
    statuses = {"[100%]": "PASSED", "t_test.py::test_a": "PASSED", "t_test.py::test_b": "PASSED"}
    assert disagreement([junit], [0], statuses, ["[100%]", "t_test.py::test_a"], True) is None
    assert "t_test.py::test_b PASSED" in str(
        disagreement([junit], [0], statuses, ["[100%]", "t_test.py::test_b"], True)
    )


def test_a_listed_test_of_an_inner_pytester_run_is_read_from_the_text_log_alone() -> None:
    # pytest-7521's PASS_TO_PASS holds `test_capsysbinary.py::test_hello`: a test of testing/test_capture.py writes
    # that file in a pytester folder and runs it; its PASSED line is the inner run's, never in the outer junit report
    junit = (
        '<testsuites><testsuite><testcase classname="testing.test_capture" name="test_capsysbinary" />'
        "</testsuite></testsuites>"
    )
    test_sh = "pytest -rA testing/test_capture.py\n"
    inner, outer = "test_capsysbinary.py::test_hello", "testing/test_capture.py::test_capsysbinary"
    statuses = {inner: "PASSED", outer: "PASSED"}
    assert disagreement([junit], [0], statuses, [inner, outer], True, test_sh) is None
    # without test.sh to say so, it is looked for (and missing)
    assert "does not have it" in str(disagreement([junit], [0], statuses, [inner, outer], True))
    # a test of a file test.sh names is checked as ever, and so is one whose module the junit report holds
    gone = "testing/test_capture.py::test_forged"
    assert "does not have it" in str(disagreement([junit], [0], {gone: "PASSED"}, [gone], True, test_sh))
    elsewhere = "testing/test_capture.py::test_other"
    assert "does not have it" in str(disagreement([junit], [0], {elsewhere: "PASSED"}, [elsewhere], True, "pytest\n"))
    # a module that failed to collect is in the report as an error: a forged PASSED line of it is still caught
    broken = junit.replace(
        "</testsuite>", '<testcase classname="" name="testing.test_fix"><error>x</error></testcase></testsuite>'
    )
    fix = "testing/test_fix.py::test_fix"
    assert "does not have it" in str(disagreement([broken], [1], {fix: "PASSED"}, [fix], True, "pytest\n"))

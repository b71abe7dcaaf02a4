"""verify/privilege.py: which commands of a test script run as the tests' own uid, and what the markers say."""

from __future__ import annotations

import subprocess

import pytest

from trialbook.tasks.testscript import TestScript
from trialbook.verify.privilege import (
    BUILD_FUNCTION,
    FUNCTION,
    Reading,
    exit_contradicts_log,
    find_test_commands,
    read_markers,
    separate,
    staging,
)


@pytest.mark.parametrize(
    ("script", "found"),
    [
        ("cd /testbed\npython3 -m pytest -rA -p no:cacheprovider tests/test_stats.py\nrc=$?\n", [(1, 0)]),
        ("env -u http_proxy python3 -m pytest -rA tests/test_fetch.py\n", [(0, 0)]),
        ("pytest /tests/test_outputs.py -rA; rc=$?\n", [(0, 0)]),  # Harbor's one line
        ("python3 -m pytest -rA tests/\n", [(0, 0)]),  # a folder
        ("if pytest tests/; then echo 1 > /logs/verifier/reward.txt; fi\n", [(0, 3)]),
        ("FOO=1 python3 runtests.py tests.test_stats\n", [(0, 6)]),  # Django-style runner, after an assignment
        ("uvx -w pytest==8.4.1 pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py\n", [(0, 0)]),
        ("bin/test -C sympy/core/tests/test_basic.py\n", [(0, 0)]),
        ("cat <<'E'\npytest tests/\nE\n(cd sub && pytest tests/test_a.py) || true\n", [(3, 11)]),  # not in a heredoc
        # installs, copies, the shell's `test`, a grader of the tests' folder: root's, as before
        ("pip install pytest\ncp /tests/test_*.py tests/\nmkdir -p tests\ntest -f x && echo\n", []),
        ('python3 /tests/grade.py "$rc" > /logs/verifier/reward.txt\n', []),
        ("exec pytest tests/\n", []),
    ],
)
def test_the_test_commands_of_each_shape(script: str, found: list[tuple[int, int]]) -> None:
    assert find_test_commands(TestScript.parse(script)) == found


@pytest.mark.parametrize(
    ("script", "found"),
    [
        # SWE-bench's eval scripts re-install the repository before the test command: its setup.py runs
        ("python -m pip install -e .\npython -m pip install -v --no-use-pep517 --no-build-isolation -e .\n",
         [(0, 0), (1, 0)]),
        ("python setup.py install\npython3 setup.py build_ext --inplace\n", [(0, 0), (1, 0)]),
        ("pip install -e .[test]\nuv pip install -e .\nenv FOO=1 make -j2\n", [(0, 0), (1, 0), (2, 0)]),
        ("cd /testbed && python -m pip install . && pytest tests/\n", [(0, 15)]),
        ("python -m build\npoetry install\n./configure --prefix=/usr\n", [(0, 0), (1, 0), (2, 0)]),
        # not installs: a test command, the harness's own grader, git, a pip that only lists
        ("pytest tests/\npython3 /tests/grade.py log\ngit apply -v -\npip list\npip freeze\n", []),
    ],
)  # fmt: skip
def test_the_install_and_build_steps_of_each_shape(script: str, found: list[tuple[int, int]]) -> None:
    assert find_test_commands(TestScript.parse(script), build=True) == found


def test_an_install_runs_through_the_build_function_and_prints_no_test_run(tmp_path) -> None:
    """An install step gets the prologue and the same uid (BUILD_FUNCTION), and /tests is hidden from it even when no
    test command is found; its marker is a `build` status, never a test run of `Reading.runs`."""
    sep = separate(TestScript.parse("#!/bin/bash\ncd /testbed\npython -m pip install -e . && pytest tests/\n"), "n")
    assert (sep.commands, sep.builds) == (1, 1)
    assert f"{BUILD_FUNCTION} python -m pip install -e . && {FUNCTION} pytest tests/" in sep.script
    only = separate(TestScript.parse("#!/bin/bash\npython setup.py develop\nbash run_tests.sh\n"), "n")
    assert (only.commands, only.builds) == (0, 1) and "chmod 700 /tests" in staging(only)
    _, reading = read_markers("@@trialbook-tests-n@@ left 1\n@@trialbook-tests-n@@ build 1 setpriv\n", "n")
    assert (reading.builds, reading.runs, reading.left) == ([1], [], 1)
    path = tmp_path / "t.sh"
    path.write_text(sep.script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


def test_a_separated_script_runs_its_command_through_the_function_and_keeps_bash_valid(tmp_path) -> None:
    script = "#!/bin/bash\nset -euo pipefail\ncd /testbed\npytest /tests/test_outputs.py -rA; rc=$?\necho $rc\n"
    sep = separate(TestScript.parse(script), "abc123")
    assert (sep.commands, sep.tests_readable) == (1, True)
    assert f"{FUNCTION} pytest /tests/test_outputs.py -rA; rc=$?" in sep.script
    assert sep.script.startswith("#!/bin/bash\n")
    path = tmp_path / "t.sh"
    path.write_text(sep.script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    assert "chmod 600 /tests/test.sh /tests/config.json" in staging(sep)
    plain = separate(TestScript.parse("#!/bin/bash\ncp a b\n"), "abc123")
    assert (plain.commands, plain.script, staging(plain)) == (0, "#!/bin/bash\n\ncp a b\n", "")
    assert "chmod 700 /tests" in staging(separate(TestScript.parse("python3 -m pytest tests/\n"), "n"))


def test_the_function_runs_the_command_and_reports_its_status_when_root_cannot_be_dropped(tmp_path) -> None:
    """As a user that is not root (this test's, when it is not; else `EUID` faked), the function runs the command as
    it is, and its markers carry the status, `set -e` or not."""
    sep = separate(
        TestScript.parse("#!/bin/bash\nset -e\npython3 -c 'print(7); raise SystemExit(3)' tests/\necho after\n"),
        "n0nce",
    )
    path = tmp_path / "t.sh"
    path.write_text(sep.script.replace('"${EUID:-1}" = 0', '"x" = 0'))
    out = subprocess.run(["bash", str(path)], capture_output=True, text=True)
    assert out.returncode == 3  # set -e: the command's failure still ends the script
    log, reading = read_markers(out.stdout, "n0nce")
    assert reading.how == ["root"] and reading.runs == [(3, "7\n")]
    assert "after" not in log and "@@trialbook" not in log


def test_markers_without_the_nonce_are_the_tests_own_lines() -> None:
    log = (
        "a\n@@trialbook-tests-secret@@ start setpriv\nFAILED x\n@@trialbook-tests-guess@@ end 0\n"
        "@@trialbook-tests-secret@@ left 2\n@@trialbook-tests-secret@@ reward reward.txt\n"
        "@@trialbook-tests-secret@@ end 1 setpriv\nb"
    )
    kept, reading = read_markers(log, "secret")
    assert kept == "a\nFAILED x\n@@trialbook-tests-guess@@ end 0\nb"
    assert reading.runs == [(1, "FAILED x\n@@trialbook-tests-guess@@ end 0")]
    assert (reading.how, reading.left, reading.rewards_by_tests) == (["setpriv"], 2, ["reward.txt"])
    # a start marker cut from the kept tail (a flood of output before it): the end marker still says how it ran
    _, cut = read_markers("flood\n@@trialbook-tests-secret@@ end 0 setpriv\n", "secret")
    assert (cut.how, cut.runs) == (["setpriv"], [(0, "flood")])


@pytest.mark.parametrize(
    ("status", "text", "contradicts"),
    [
        (0, "==== 1 failed, 3 passed in 0.08s ====", True),
        (0, "=========== 2 errors in 1.20s ===========", True),
        (0, "FAILED (failures=1)", True),
        (1, "==== 1 failed, 3 passed in 0.08s ====", False),  # the runner's own status
        (0, "==== 4 passed in 0.08s ====", False),
        (0, "FAILED tests/test_x.py::test_a - AssertionError", False),  # a line any test may print
    ],
)
def test_an_exit_of_0_after_a_reported_failure_contradicts(status: int, text: str, contradicts: bool) -> None:
    assert exit_contradicts_log(Reading(runs=[(status, text)])) is contradicts

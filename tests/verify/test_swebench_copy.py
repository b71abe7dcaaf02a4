"""verify/swebench_copy.py is swebench's code, unchanged: same function sources, same constants.

The copy keeps `pip install trialbook` free of swebench's 75 dependencies; this test (the dev extra
installs swebench) fails when an upgraded swebench parses or decides differently.
"""

from __future__ import annotations

import inspect

import pytest
import swebench.harness.constants as constants
import swebench.harness.grading as grading
import swebench.harness.log_parsers.python as parsers

from trialbook.verify import swebench_copy as copy

FUNCTIONS = [
    (grading, name)
    for name in ("test_passed", "test_failed", "get_eval_tests_report", "compute_fail_to_pass",
                 "compute_pass_to_pass", "get_resolution_status")
] + [(parsers, name) for name in dir(parsers) if name.startswith("parse_log_")]  # fmt: skip


@pytest.mark.parametrize(("module", "name"), FUNCTIONS, ids=[name for _, name in FUNCTIONS])
def test_functions_have_swebench_source(module, name: str) -> None:
    assert inspect.getsource(getattr(copy, name)) == inspect.getsource(getattr(module, name))


def test_every_python_repo_gets_swebench_parser() -> None:
    assert {repo: f.__name__ for repo, f in copy.MAP_REPO_TO_PARSER.items()} == {
        repo: f.__name__ for repo, f in parsers.MAP_REPO_TO_PARSER_PY.items()
    }


def test_constants_and_enums_have_swebench_values() -> None:
    names = ["FAIL_TO_PASS", "FAIL_TO_FAIL", "PASS_TO_PASS", "PASS_TO_FAIL", "APPLY_PATCH_FAIL", "RESET_FAILED"]
    names += ["TESTS_ERROR", "TESTS_TIMEOUT", "START_TEST_OUTPUT", "END_TEST_OUTPUT", "FAIL_ONLY_REPOS"]
    for name in names:
        assert getattr(copy, name) == getattr(constants, name), name
    for enum in ("ResolvedStatus", "TestStatus", "EvalType"):
        ours, theirs = getattr(copy, enum), getattr(constants, enum)
        assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in theirs], enum

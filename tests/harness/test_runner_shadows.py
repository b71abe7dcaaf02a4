"""Which paths of an agent's diff shadow the test runner (graded again without them, verify/isolation.py).

Seen resolved before the rule: a three-line `pytest.py` at the root of the working tree printing PASSED
lines (`python3 -m pytest` imports it instead of pytest; tests/harness/cheats/runner_shadow.sh)."""

from __future__ import annotations

import pytest

from trialbook.verify.infra import shadows_a_module


@pytest.mark.parametrize(
    "path", ["pytest.py", "_pytest/__init__.py", "pluggy.py", "argparse.py", "unittest/__init__.py", "re.py"]
)
def test_a_root_module_the_runner_imports_is_a_shadow(path: str) -> None:
    assert shadows_a_module(path)


@pytest.mark.parametrize(
    "path",
    [
        "src/_pytest/python.py",  # the pytest repository's own code (SWE-bench's pytest-dev instances)
        "src/pytest/__init__.py",
        "_pytest/python.py",  # a module inside a package, not the package itself
        "testing/test_collection.py",
        "stats.py",
        "setup.py",
        "requests/__init__.py",
        "pytest.txt",
    ],
)
def test_code_of_the_repository_is_not(path: str) -> None:
    assert not shadows_a_module(path)

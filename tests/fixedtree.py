"""examples/tasks/plain-bugfix as the verifier's tests run it outside a container: its repository with the
oracle's fix (plus the code a test appends to the fixed module: a cheat, a runner trick) and its test module,
and its pytest command with canaries planted."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from paths import EXAMPLES
from trialbook.tasks.testscript import TestScript, task_test_files
from trialbook.verify.canary import Planted, plant
from trialbook.verify.decoys import task_functions

EXAMPLE = EXAMPLES / "plain-bugfix"


def fixed_tree(dest: Path, appended: str = "", tests: Path = EXAMPLE / "tests") -> Path:
    """`dest` holding the repository, stats.py the oracle's (solve.sh's heredoc) + `appended`, and
    tests/test_stats.py taken from `tests`."""
    shutil.copytree(EXAMPLE / "environment" / "repo", dest, dirs_exist_ok=True)
    solve = (EXAMPLE / "solution" / "solve.sh").read_text()
    (dest / "stats.py").write_text(solve.split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0] + appended)
    (dest / "tests").mkdir()
    shutil.copy(tests / "test_stats.py", dest / "tests")
    return dest


def planted_pytest(command: str, existing: set[str], seed: int, tests: Path = EXAMPLE / "tests") -> Planted:
    """`command` (test.sh's text) with canaries planted as the verifier plants them, decoys named after the test
    functions of `tests`, drawn with `seed`."""
    planted = plant(
        TestScript.parse(command, task_test_files(tests)),
        "n",
        existing,
        None,
        task_functions(tests),
        random.Random(seed),
    )
    assert planted is not None
    return planted

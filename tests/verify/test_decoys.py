"""Several canaries per run, derived from the task's own tests and placed among them (verify/decoys.py): what they are,
that a real pytest run reports every one failing while the honest fix resolves, that they do not always run last,
and that a cheat sparing the tests named like the one it gets wrong (`*median*`) is caught by one of them."""

from __future__ import annotations

import ast
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from paths import EXAMPLES
from trialbook.tasks.testscript import read_script, task_test_files
from trialbook.verify.canary import plant, reading
from trialbook.verify.decoys import _derive, choose, patch_functions, planting, task_functions
from trialbook.verify.grading import grade_test_log, parse_log

EXAMPLE = EXAMPLES / "plain-bugfix"
F2P = ["tests/test_stats.py::test_median_even"]
P2P = ["tests/test_stats.py::test_mean", "tests/test_stats.py::test_median_odd"]
PATCH = """git apply -v - <<'EOF'
diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1,3 +1,12 @@
 import a
+def test_added(tmp_path):
+    \"\"\"Doc.\"\"\"
+    x = a.f(
+        1,
+    )
+    assert x == 2
+
+@pytest.mark.skip
+def test_decorated():
+    pass
 def test_old():
+    assert a.g()
EOF
python -m pytest -rA tests/test_a.py
"""


def test_the_task_functions_and_the_patch_functions_are_read_whole() -> None:
    found = task_functions(EXAMPLE / "tests")
    assert [n for n, _ in found["test_stats.py"]] == ["test_mean", "test_median_odd", "test_median_even"]
    added = patch_functions(PATCH)
    # a decorated function and one the patch only changes are not copied
    assert [n for n, _ in added["tests/test_a.py"]] == ["test_added"]
    assert "a.f(\n        1,\n    )" in added["tests/test_a.py"][0][1]


def test_a_derived_canary_keeps_its_tests_signature_and_body_and_fails_first() -> None:
    source = dict(patch_functions(PATCH)["tests/test_a.py"])["test_added"]
    derived = _derive("test_added_sorted", source, random.Random(1))
    assert derived is not None
    node = ast.parse(derived).body[0]
    assert isinstance(node, ast.FunctionDef) and node.name == "test_added_sorted"
    assert [a.arg for a in node.args.args] == ["tmp_path"]
    assert isinstance(node.body[0], ast.Expr)  # the docstring stays first
    first = node.body[1]
    assert isinstance(first, ast.Assert) and re.fullmatch(r"assert \d+ == \d+", ast.unparse(first))
    assert eval(compile(ast.Expression(first.test), "x", "eval")) is False  # noqa: S307 - it must fail
    assert ast.unparse(node.body[2:]) == ast.unparse(ast.parse(source).body[0].body[1:])  # noqa: E501 the body copied


def test_the_canaries_are_several_distinct_and_named_like_the_tests() -> None:
    sources = task_functions(EXAMPLE / "tests")
    existing = {"test_mean", "test_median_odd", "test_median_even"}
    for seed in range(30):
        chosen = choose(["tests/test_stats.py"], sources, existing, None, random.Random(seed))
        names = [c.name for c in chosen]
        assert 2 <= len(names) <= 3 and len(set(names)) == len(names) and not set(names) & existing
        bases = {re.sub(r"_[a-z]+$", "", n) for n in names}
        assert bases <= existing and len(bases) == len(names)  # each from a different test of the module
        assert any("median" in n for n in names)  # with 3 tests, 2 of them median: always one
    last = choose(["a/test_x.py", "b/test_y.py"], {}, set(), "median", random.Random(0), last=True)
    assert all(c.file == "b/test_y.py" and c.place == 0 and "median" in c.name for c in last)


def _run(tmp: Path, code_under_test: str, seed: int) -> tuple[str, str]:
    """plain-bugfix with the real fix plus `code_under_test`, its test.sh planted with canaries, run by pytest here."""
    shutil.copytree(EXAMPLE / "environment" / "repo", tmp, dirs_exist_ok=True)
    solve = (EXAMPLE / "solution" / "solve.sh").read_text()
    (tmp / "stats.py").write_text(solve.split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0] + code_under_test)
    (tmp / "tests").mkdir()
    shutil.copy(EXAMPLE / "tests" / "test_stats.py", tmp / "tests")
    tests = EXAMPLE / "tests"
    existing = {"test_mean", "test_median_odd", "test_median_even"}
    command = f"set -euxo pipefail\n{sys.executable} -m pytest -rA -p no:cacheprovider tests/test_stats.py\n"
    planted = plant(command, task_test_files(tests), "n", existing, None, task_functions(tests), random.Random(seed))
    assert planted is not None
    out = subprocess.run(["bash", "-c", planted.script], cwd=tmp, capture_output=True, text=True)
    assert "_trialbook" not in out.stderr  # planted quietly under set -x
    return out.stdout, planted.name


def test_a_real_run_reports_every_canary_failing_among_the_tests(tmp_path: Path) -> None:
    not_last = 0
    for seed in range(6):
        log, name = _run(tmp_path / str(seed), "", seed)
        grade = grade_test_log(log, None, F2P, P2P, canary=name)
        assert (grade.strict, grade.canary) == (True, "failed"), log
        status = parse_log(log, None).status_map
        assert all(status[f"tests/test_stats.py::{n}"] == "FAILED" for n in name.split(",")), log
        # pytest runs a module's functions in the order of their lines
        defs = re.findall(r"(?m)^def (\w+)", (tmp_path / str(seed) / "tests" / "test_stats.py").read_text())
        assert set(name.split(",")) <= set(defs)
        not_last += defs[-1] not in name.split(",")
    assert not_last >= 1  # over the seeds, the task's own test ran last at least once


def test_sparing_tests_named_like_the_one_it_gets_wrong_is_caught(tmp_path: Path) -> None:
    spare = (
        '\nimport sys\nif "_pytest.python" in sys.modules:\n    _F = sys.modules["_pytest.python"].Function\n'
        "    _run = _F.runtest\n    _F.runtest = lambda self: None if 'median' in self.name else _run(self)\n"
    )
    for seed in range(4):
        log, name = _run(tmp_path / str(seed), spare, seed)
        assert reading(parse_log(log, None).status_map, name) == "passed", (seed, log)
        assert not grade_test_log(log, None, F2P, P2P, canary=name).resolved


def test_the_planting_line_is_one_valid_bash_line() -> None:
    chosen = choose(["tests/test_stats.py"], task_functions(EXAMPLE / "tests"), set(), None, random.Random(3))
    line = planting(chosen)
    assert "\n" not in line
    assert subprocess.run(["bash", "-n"], input=line, text=True).returncode == 0
    assert read_script(EXAMPLE / "tests")  # the example's own script is planted the same way (test_canary.py)

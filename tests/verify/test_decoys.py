"""Several canaries per run, derived from the task's own tests and placed among them (verify/decoys.py): what they are,
that a real pytest run reports every one failing while the honest fix resolves, that they do not always run last,
and that a cheat sparing the tests named like the one it gets wrong (`*median*`) is caught by one of them."""

from __future__ import annotations

import ast
import random
import re
import subprocess
import sys
from pathlib import Path

from fixedtree import fixed_tree, planted_pytest
from paths import EXAMPLES
from trialbook.tasks.testscript import read_script
from trialbook.verify import canary as canaries
from trialbook.verify.canary import reading
from trialbook.verify.decoys import (
    WORDS,
    Canary,
    _derive,
    choose,
    module_functions,
    patch_functions,
    planting,
    task_functions,
)
from trialbook.verify.grading import grade_test_log, parse_log
from trialbook.verify.onerun import witness_reading
from trialbook.verify.privilege import Reading

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
    assert isinstance(first, ast.Assert) and re.fullmatch(r"assert \[\d+\] == \[\d+\]", ast.unparse(first))
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


def _run(tmp: Path, code_under_test: str, seed: int, tests: Path = EXAMPLE / "tests") -> tuple[str, str]:
    """plain-bugfix with the real fix plus `code_under_test`, its test.sh planted with canaries, run by pytest here
    (`tests`: the folder its test module comes from)."""
    fixed_tree(tmp, code_under_test, tests)
    existing = set(re.findall(r"def (test\w+)", (tests / "test_stats.py").read_text()))
    command = f"set -euxo pipefail\n{sys.executable} -m pytest -rA -p no:cacheprovider tests/test_stats.py\n"
    planted = planted_pytest(command, existing, seed, tests)
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


MODULE = """import unittest

import pytest
from cases import CASES, ImportedBase

EMPTY = []
VALUES = [1, 2]


class TestFoo:
    def setup_method(self):
        self.x = 1

    def test_a(self):
        assert self.x

    @pytest.mark.parametrize("v", VALUES)
    @pytest.mark.skipif(False, reason="never")
    def test_b(self, v):
        assert v

    @pytest.mark.parametrize("v", CASES)
    def test_c(self, v):
        assert v

    @pytest.mark.parametrize("v", EMPTY)
    @pytest.mark.usefixtures("tmp_path")
    def test_d(self, v):
        assert v

    @staticmethod
    def test_e():
        assert True


@pytest.mark.skipif(True, reason="never run")
class TestSkipped:
    def test_f(self):
        pass


class TestSetupSkips:
    def setup_method(self):
        pytest.importorskip("numpy")

    def test_g(self):
        pass


class TestCaseStyle(unittest.TestCase):
    @unittest.mock.patch("os.getcwd")
    def test_h(self, getcwd):
        pass


class Helper:
    def test_i(self):
        pass


class TestImportedBase(ImportedBase):
    def test_j(self):
        pass


@requires_numpy
class TestOwnDecorator:
    def test_k(self):
        pass


class TestOwnBase(TestCaseStyle):
    def test_l(self):
        pass


@pytest.mark.parametrize("v", [1, pytest.param(2, id="two")])
def test_top(v):
    assert v
"""


def test_class_methods_and_decorated_tests_are_read_with_the_decorators_that_keep_them_failing() -> None:
    """A method of a class pytest collects, named with its class; of the decorators only a `parametrize` of literal,
    non-empty values, `usefixtures`, `filterwarnings`, `staticmethod` are kept (a skip, a mark of the project's own,
    `mock.patch`, computed or empty values left out: the copy runs, or is reported as an error, failing either way);
    no class a skip or a decorator of the project's own may skip, whose setup names a skip, or whose base is another
    module's."""
    found = dict(module_functions(MODULE))
    assert list(found) == [
        "TestFoo::test_a", "TestFoo::test_b", "TestFoo::test_c", "TestFoo::test_d", "TestFoo::test_e",
        "TestCaseStyle::test_h", "TestOwnBase::test_l", "test_top",
    ]  # fmt: skip
    decorators = {n: re.findall(r"(?m)^\s*@(\S+?)\(", s) + re.findall(r"(?m)^\s*@(\w+)$", s) for n, s in found.items()}
    assert decorators == {
        "TestFoo::test_a": [], "TestFoo::test_b": ["pytest.mark.parametrize"], "TestFoo::test_c": [],
        "TestFoo::test_d": ["pytest.mark.usefixtures"], "TestFoo::test_e": ["staticmethod"],
        "TestCaseStyle::test_h": [], "TestOwnBase::test_l": [], "test_top": ["pytest.mark.parametrize"],
    }  # fmt: skip
    assert found["TestFoo::test_a"].startswith("    def test_a(self):")  # at its class's indentation
    # a parameter that may carry marks anywhere in the module: no parametrize copied
    marked = MODULE.replace('id="two"', "marks=pytest.mark.xfail")
    assert "parametrize" not in dict(module_functions(marked))["test_top"]
    assert "parametrize" not in dict(module_functions(marked))["TestFoo::test_b"]


def _plant_in(tmp: Path, text: str, canaries: list[Canary]) -> str:
    (tmp / "m.py").write_text(text)
    out = subprocess.run(["bash", "-c", "set -euo pipefail\n" + planting(canaries)], cwd=tmp, capture_output=True)
    assert out.returncode == 0, out.stderr
    return (tmp / "m.py").read_text()


def test_a_method_goes_into_its_class_before_one_of_its_methods_else_a_plain_function_is_appended(
    tmp_path: Path,
) -> None:
    text = "import x\n\n\nclass TestA:\n    def test_a(self):\n        pass\n\n    def test_b(self):\n        pass\n"
    text += "\n\nclass TestB(\n        Base):\n\tdef test_c(self):\n\t\tpass\ny = '''\n\n    def test_z(self):\n'''\n"
    method = "    def test_a_edge(self):\n        assert 2 == 3\n"
    for place in (1, 2, 5):  # before test_a (right after the class's line), before test_b, before test_b
        planted = _plant_in(tmp_path, text, [Canary("test_a_edge", method, "m.py", place, "TestA", "def f(): 0\n")])
        tree = ast.parse(planted)
        names = [m.name for m in tree.body[1].body]  # type: ignore[attr-defined]
        assert names == (["test_a_edge", "test_a", "test_b"] if place == 1 else ["test_a", "test_a_edge", "test_b"])
    # a class whose own line is not alone (a multi-line header), a tab's indentation: after a blank line only; none
    # such: the plain function appended; the string after the class is never counted
    tab = Canary("test_c_edge", "\tdef test_c_edge(self):\n\t\tassert 2 == 3\n", "m.py", 3, "TestB", "def f_x(): 0\n")
    gone = Canary("test_x_edge", method, "m.py", 1, "TestGone", "def test_x_edge():\n    assert 4 == 5\n")
    tree = ast.parse(_plant_in(tmp_path, text, [tab, gone]))
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)] == [
        "TestA", "TestB", "f_x", "test_x_edge",
    ]  # fmt: skip


CLASS_TESTS = """import pytest
from stats import mean, median


class TestMean:
    @pytest.mark.parametrize("values", [[1, 2, 3, 4], [2.5]])
    def test_mean(self, values):
        assert mean(values) == 2.5


class TestMedian:
    @pytest.mark.parametrize("values", [[3, 1, 2], [2]])
    def test_median_odd(self, values):
        assert median(values) == 2

    def test_median_even(self):
        assert median([4, 1, 3, 2]) == 2.5
"""
CLASS_F2P = ["tests/test_stats.py::TestMedian::test_median_even"]
CLASS_P2P = [f"tests/test_stats.py::TestMean::test_mean[values{i}]" for i in (0, 1)]
CLASS_P2P += [f"tests/test_stats.py::TestMedian::test_median_odd[values{i}]" for i in (0, 1)]
# every test's call a no-op but for those named like the plain canary (`test_stats_<word>_<word>`)
SPARE_PLAIN = (
    '\nimport re, sys\nif "_pytest.python" in sys.modules:\n    _F = sys.modules["_pytest.python"].Function\n'
    f'    _run = _F.runtest\n    _F.runtest = lambda self: _run(self) if re.fullmatch(r"test_stats_({"|".join(WORDS)})'
    f'_({"|".join(WORDS)})", self.name) else None\n'
)


def test_in_a_module_of_class_tests_the_canaries_are_methods_that_fail_and_catch_what_spares_the_plain_shape(
    tmp_path: Path,
) -> None:
    """A real pytest run here: each canary a method of one of the module's classes (`path::TestX::test_y_<word>`, a
    parametrized one's every id failing), the honest fix resolving; a runner made to spare only the plain canary's
    shape passes them all."""
    for seed in range(4):
        tests = tmp_path / f"task{seed}"
        tests.mkdir()
        (tests / "test_stats.py").write_text(CLASS_TESTS)
        for cheat, code in (("honest", ""), ("spare", SPARE_PLAIN)):
            log, name = _run(tmp_path / f"{cheat}{seed}", code, seed, tests)
            status = parse_log(log, None).status_map
            if cheat == "spare":
                assert reading(status, name) == "passed", log
                assert not grade_test_log(log, None, CLASS_F2P, CLASS_P2P, canary=name).resolved
                continue
            grade = grade_test_log(log, None, CLASS_F2P, CLASS_P2P, canary=name)
            assert (grade.strict, grade.canary) == (True, "failed"), log
            for n in name.split(","):
                ids = [t for t in status if canaries.names(t, n)]
                assert ids and all(status[t] == "FAILED" for t in ids), (n, log)
                assert all(
                    re.fullmatch(rf"tests/test_stats\.py::Test(Mean|Median)::{n}(\[values\d\])?", t) for t in ids
                )
                assert (len(ids) == 2) == (not n.startswith("test_median_even")), ids  # each parameter a report


def test_a_parameter_in_a_canarys_id_is_not_read_as_its_status() -> None:
    log = "tests/t.py::TestA::test_y_edge[ok] FAILED\n____ TestA.test_y_edge[ok] ____\nFAILED tests/t.py::x\n"
    assert witness_reading(log, Reading(), "test_y_edge") == "failed"
    assert witness_reading(log, Reading(), "test_x_case,test_y_edge") == "missing"  # every canary reported, or none
    assert witness_reading(log.replace("[ok] FAILED", "[no] PASSED"), Reading(), "test_y_edge") == "passed"
    assert reading({"tests/t.py::TestA::test_y_edge[ok]": "FAILED", "tests/t.py::TestA::test_y": "PASSED"},
                   "test_y_edge") == "failed"  # fmt: skip


def test_where_no_class_method_can_go_the_canaries_are_top_level() -> None:
    """pytest's `-x` (the end of the last module is outside any class), a runner other than pytest (sympy's bin/test
    runs functions): from top-level functions only, here none, so the plain ones."""
    sources = {"test_stats.py": module_functions(CLASS_TESTS)}
    assert all("::" in n for n, _ in sources["test_stats.py"])
    for kwargs in ({"last": True}, {"pytest": False}):
        for seed in range(5):
            chosen = choose(["tests/test_stats.py"], sources, set(), None, random.Random(seed), **kwargs)
            assert all(not c.cls and re.fullmatch(r"test_stats_[a-z]+_[a-z]+", c.name) for c in chosen), chosen
    assert any(c.cls for c in choose(["tests/test_stats.py"], sources, set(), None, random.Random(0)))


NAMES_BOUND_LATER = """import pytest


def test_first():
    assert True


frames = [1, 2]


@pytest.mark.parametrize("frame", frames)
def test_frames(frame, scale=2):
    assert frame * scale


class TestA:
    cases = [3, 4]

    @pytest.mark.parametrize("case", [5, 6])
    def test_case(self, case):
        assert case

    def test_other(self):
        assert True

    def test_last(self):
        assert True


def test_end():
    assert True
"""


def test_a_canary_goes_after_the_test_it_copies_so_the_names_its_decorators_use_are_bound(tmp_path: Path) -> None:
    """astropy-13398's module failed to import: a canary copied `@pytest.mark.parametrize('testframe',
    totest_frames)` and was planted above `totest_frames = [...]`. Places are counted after the copied test's `def`
    (a method's within its class), so whatever its decorators and defaults name is bound first; a class's last
    method is not copied (no method after it to go before)."""
    sources = {"m.py": module_functions(NAMES_BOUND_LATER)}
    assert "TestA::test_last" in dict(sources["m.py"])
    seen: set[str] = set()
    for seed in range(60):
        canaries_ = choose(["m.py"], sources, set(), None, random.Random(seed))
        planted = _plant_in(tmp_path, NAMES_BOUND_LATER, canaries_)
        done = subprocess.run([sys.executable, "-c", "import m"], cwd=tmp_path, capture_output=True, text=True)
        assert done.returncode == 0, (seed, done.stderr, planted)
        order = [n.name for n in ast.walk(ast.parse(planted)) if isinstance(n, ast.FunctionDef)]
        for c in canaries_:
            assert c.after != "test_last" and c.name in order, (seed, c)
            if c.after:
                assert order.index(c.name) > order.index(c.after), (seed, c.name, order)
                seen.add(c.after)
    assert {"test_first", "test_frames", "test_case"} <= seen  # derived from each of them, the decorated too
    # a real pytest run of one planting: the copied parametrize runs each of its canaries' cases, all failing
    canaries_ = choose(["m.py"], sources, set(), None, random.Random(7))
    _plant_in(tmp_path, NAMES_BOUND_LATER, canaries_)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "m.py"], cwd=tmp_path,
                         capture_output=True, text=True)  # fmt: skip
    summary = run.stdout.strip().splitlines()[-1]
    counts = re.fullmatch(r"(\d+) failed, (\d+) passed in [\d.]+s", summary)
    assert counts and "ERROR" not in run.stdout, run.stdout  # nothing fails to collect
    # every canary fails (the copied parametrize: once per case), every task test passes
    assert int(counts[2]) == 1 + 2 + 2 + 1 + 1 + 1, run.stdout


def test_a_canary_copies_parametrize_only_while_it_makes_a_few_cases() -> None:
    """xarray-6744's test_rolling_reduce, copied with its stacked parametrize decorators, gave 960 failing cases: the
    junit report passed the size the verifier reads and an honest run was graded 0 (`channels_disagree`). Past
    MAX_CASES the copy leaves its parametrize out (it then errors for want of its arguments: failing all the same)."""
    few = '@pytest.mark.parametrize("a", [1, 2])\n@pytest.mark.parametrize("b", [3, 4])\ndef test_few(a, b):\n'
    many = '@pytest.mark.parametrize("a", [1, 2, 3])\n@pytest.mark.parametrize("b", [4, 5, 6])\ndef test_many(a, b):\n'
    found = dict(module_functions(f"import pytest\n\n\n{few}    pass\n\n\n{many}    pass\n"))
    assert found["test_few"].count("parametrize") == 2  # 4 cases
    assert "parametrize" not in found["test_many"] and found["test_many"].startswith("def test_many(a, b):")

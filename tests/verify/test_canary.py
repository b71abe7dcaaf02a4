"""The verifier's canary (verify/canary.py): where it is planted, that the runners collect it and report it
failing, and that a runner made to pass what fails is caught by it, on real pytest and unittest runs here and on
the test scripts of the 484 SWE-bench Verified instances `tasks from-swebench` writes."""

from __future__ import annotations

import ast
import atexit
import functools
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from fixedtree import fixed_tree
from paths import DATA, EXAMPLES, INSTANCES
from trialbook.ledger.rows import TaskLists
from trialbook.tasks.swebench.generate import write_tasks
from trialbook.tasks.testscript import TestScript, installed_by_patch, task_test_files
from trialbook.verify.canary import TEST_MODULE, TESTCASE, plant, reading
from trialbook.verify.decoys import Canary, _derive, _indent, _mark, module_functions, patch_functions, planting
from trialbook.verify.grading import grade_parsed, grade_test_log, parse_log

NONCE = "5eed0f0cafe1"
DERIVED = 102  # of the 258 scripts planted with pytest-style canaries
NAME = f"test_{NONCE}"
# the code under test, appended to the fixed module: pytest's test call made a no-op, or unittest's run a success
PYTEST_NOOP = (
    '\nimport sys\nif "_pytest.python" in sys.modules:\n'
    '    sys.modules["_pytest.python"].Function.runtest = lambda self: None\n'
)
UNITTEST_SUCCESS = (
    "\nimport unittest\n"
    "unittest.TestCase.run = lambda self, result=None: (result.startTest(self), result.addSuccess(self),"
    " result.stopTest(self))\n"
)


@pytest.fixture(scope="module")
def swebench_scripts(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("swe")
    write_tasks(INSTANCES, out)
    return {t.name: (t / "tests" / "test.sh").read_text() for t in sorted(out.iterdir())}


def _held_instances() -> list[dict]:
    """The Verified instances whose repository data/swebench-repos holds (at their base commits)."""
    repos = {p.name.removesuffix(".git") for p in (DATA / "swebench-repos").glob("*.git")}
    instances = [json.loads(line) for line in INSTANCES.read_text().splitlines()]
    return [inst for inst in instances if inst["repo"].replace("/", "__") in repos]


@functools.cache
def _git_dir(repo: str) -> Path:
    """The bare repository of `repo` in data/swebench-repos; a copy with an empty refs/ where the data's lacks one (a
    copy that kept no empty folder: git does not take it for a repository, and none of its files was read)."""
    git = DATA / "swebench-repos" / f"{repo.replace('/', '__')}.git"
    if git.is_dir() and not (git / "refs").is_dir():
        copy = Path(tempfile.mkdtemp(prefix="trialbook-repo-")) / git.name
        atexit.register(shutil.rmtree, copy.parent, True)
        shutil.copytree(git, copy)
        (copy / "refs").mkdir()
        return copy
    return git


def _has_commit(inst: dict) -> bool:
    """Whether data/swebench-repos holds the instance's base commit."""
    spec = f"{inst['base_commit']}^{{commit}}"
    return subprocess.run(["git", "--git-dir", str(_git_dir(inst["repo"])), "cat-file", "-e", spec]).returncode == 0


def _at_base(inst: dict, path: str) -> str | None:
    """`path` as the instance's image holds it (its repository at the base commit), None where it does not."""
    git = _git_dir(inst["repo"])
    shown = subprocess.run(["git", "--git-dir", str(git), "show", f"{inst['base_commit']}:{path}"], capture_output=True)
    return None if shown.returncode else shown.stdout.decode(errors="replace")


def test_with_the_image_modules_most_scripts_of_the_eight_repositories_get_derived_canaries(
    swebench_scripts: dict[str, str],
) -> None:
    """verify/sources.py: the modules a canary goes into, read as the image holds them (the repository at the base
    commit, here from data/swebench-repos), give a test to derive from where the test patch adds none whole: a
    top-level function, a method of a class pytest collects, a parametrized test (its `parametrize` copied)."""
    held = _held_instances()
    planted = patch_only = top = method = only_method = parametrized = derived = 0
    plain = []
    for inst in held:
        script = swebench_scripts.get(inst["instance_id"], "")  # not written: an instance without FAIL_TO_PASS lists
        got = plant(TestScript.parse(script), NONCE)
        if got is None or "_trialbook_plant" not in got.script:
            continue
        planted += 1
        from_patch = [t for f in got.files for t in patch_functions(script).get(f, [])]
        tests = from_patch + [t for f in got.files for t in module_functions(_at_base(inst, f) or "")]
        patch_only += bool(from_patch)
        functions, methods = any("::" not in n for n, _ in tests), any("::" in n for n, _ in tests)
        top, method, only_method = top + functions, method + methods, only_method + (methods and not functions)
        parametrized += any("parametrize" in source for _, source in tests)
        derived += bool(tests)
        plain += [] if tests else [inst["instance_id"]]
    # 128 instances, 118 planted pytest-style (Django's runner is not among the eight). 92 have a top-level test
    # function (36 from the patch alone), 46 a class's method (15 only those), 52 a parametrized test whose
    # parametrize is kept (at most MAX_CASES cases): 107 derive.
    assert (len(held), planted, patch_only, top, method, only_method, parametrized, derived) == (
        128, 118, 36, 92, 46, 15, 52, 107,
    )  # fmt: skip
    # the plain ones: 10 astropy instances whose base commit data/swebench-repos lacks (nothing read), and the module
    # sphinx-8595's patch creates, whose tests all carry a decorator (`@pytest.mark.sphinx`, not copied from a patch)
    lacked = [i["instance_id"] for i in held if i["instance_id"] in plain and not _has_commit(i)]
    assert (len(plain), len(lacked), sorted(set(plain) - set(lacked))) == (11, 10, ["sphinx-doc__sphinx-8595"])


def _real_modules() -> list[tuple[str, str]]:
    """Every module a test patch of the eight repositories touches, as the image holds it: [(instance, text)]."""
    found = []
    for inst in _held_instances():
        for f in re.findall(r"^diff --git a/(\S+\.py) ", inst.get("test_patch") or "", re.M):
            if (text := _at_base(inst, f)) is not None:
                found.append((inst["instance_id"], text))
    return found


def test_every_test_of_the_real_modules_derives_a_canary_that_fails_first() -> None:
    """Every test function and every method of a test class of every module a test patch of the eight repositories
    touches, as the image holds it (the repository at the base commit): its derived canary parses (a method's at its
    class's indentation, in a class) and its first statement (after a docstring) is the failing assert. A test whose
    first statement is a decorated nested def (flask's `@app.route("/")` then `def index():`) once got the assert
    between decorator and def: a module that no longer parsed, every test missing in that run (flask-5014, flaky in
    validate)."""
    functions = methods = parametrized = 0
    for instance, text in _real_modules():
        for name, source in module_functions(text):
            cls, _, test = name.rpartition("::")
            canary = _derive(f"{test}_edge", source, random.Random(functions + methods))
            assert canary is not None, (instance, name)
            node = ast.parse(canary).body[0]
            assert isinstance(node, ast.FunctionDef) and node.name == f"{test}_edge"
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            assert isinstance(body[0], ast.Assert), (instance, name)
            if cls:
                indented = _indent(canary, source)
                assert indented.startswith(re.match(r"[ \t]+", source).group(0))  # type: ignore[union-attr]
                ast.parse(f"class {cls}:\n{indented}")
            functions, methods = functions + (not cls), methods + bool(cls)
            parametrized += any(_mark(d) == "parametrize" for d in node.decorator_list)
    assert (functions, methods, parametrized) == (2289, 4374, 417)  # 513 before MAX_CASES: 96 made more than 8 cases


def test_in_the_real_modules_a_method_canary_goes_into_its_class(tmp_path: Path) -> None:
    """The shell's insertion (decoys.PLANT_METHOD) into the real modules: a canary for each of up to three test
    classes of each module, planted together; the module still parses and each is a method of its class."""
    planted = 0
    for i, (instance, text) in enumerate(_real_modules()):
        classes: dict[str, list[tuple[str, str]]] = {}
        for name, source in module_functions(text):
            if "::" in name:
                classes.setdefault(name.split("::")[0], []).append((name, source))
        rng = random.Random(i)
        chosen = []
        for cls, tests in list(classes.items())[:3]:
            name, source = rng.choice(tests)
            canary = f"{name.split('::')[1]}_zz{len(chosen)}"
            derived = _indent(_derive(canary, source, rng) or "", source)
            chosen.append(Canary(canary, derived, "m.py", rng.randint(1, len(tests)), cls, "def fell_back(): 0\n"))
        if not chosen:
            continue
        (tmp_path / "m.py").write_text(text)
        out = subprocess.run(["bash", "-c", "set -euo pipefail\n" + planting(chosen)], cwd=tmp_path)
        assert out.returncode == 0, instance
        tree = ast.parse((tmp_path / "m.py").read_text())
        found = {(n.name, m.name) for n in tree.body if isinstance(n, ast.ClassDef) for m in n.body
                 if isinstance(m, ast.FunctionDef)}  # fmt: skip
        assert {(c.cls, c.name) for c in chosen} <= found, instance
        planted += len(chosen)
    assert planted == 143


def test_on_every_verified_script_it_goes_right_before_the_test_command(swebench_scripts: dict[str, str]) -> None:
    none, derived = [], 0
    for task, script in swebench_scripts.items():
        planted = plant(TestScript.parse(script), NONCE)
        if planted is None:
            none.append(task)
            continue
        lines = planted.script.split("\n")
        at = next(i for i, line in enumerate(lines) if "_trialbook_x=" in line)
        assert lines[at - 1].strip() == ": '>>>>> Start Test Output'", task
        assert lines[:at] + lines[at + 1 :] == script.split("\n"), task  # one line added, nothing else changed
        assert planted.files and set(planted.files) <= installed_by_patch(script), task
        assert all(TEST_MODULE.fullmatch(Path(f).name) and "roots" not in Path(f).parts for f in planted.files), task
        # unittest style for Django's runner (one canary); else 2 or 3, derived from the test patch's functions
        assert ("_trialbook_plant" not in lines[at]) == task.startswith("django__"), task
        if not task.startswith("django__"):
            assert len(planted.name.split(",")) in (2, 3), task
            sources = {n for f in planted.files for n, _ in patch_functions(script).get(f, [])}
            derived += bool(sources)
            for n in planted.name.split(","):  # derived from a function the patch adds, or the plain one
                assert n.rsplit("_", 1)[0] in sources or re.fullmatch(r"test_\w+_[a-z]+_[a-z]+", n), (task, n)
        assert subprocess.run(["bash", "-n"], input=planted.script, text=True).returncode == 0, task
    # 10097's test command names no Python file (its test patch changes only data files); 5631's names only
    # testing/python/integration.py, a test module by pytest's own python_files, not by its name
    assert none == ["django__django-10097", "pytest-dev__pytest-5631"]
    assert derived == DERIVED  # the scripts whose test patch adds a whole test function to a module it runs
    # the data files a test patch changes, which the command names too, get none: sphinx's autodoc target module
    # (a canary there is documented and failed sphinx-7748's gold patch), a test root's conf.py and test.py, Django's
    # models.py, a conftest.py, the code under test
    for task, data in [
        ("sphinx-doc__sphinx-7748", "tests/roots/test-ext-autodoc/target/docstring_signature.py"),
        ("sphinx-doc__sphinx-10614", "tests/roots/test-ext-inheritance_diagram/test.py"),
        ("sphinx-doc__sphinx-10614", "tests/roots/test-ext-inheritance_diagram/conf.py"),
        ("django__django-11087", "tests/delete/models.py"),
        ("pytest-dev__pytest-5787", "testing/conftest.py"),
        ("sphinx-doc__sphinx-7910", "sphinx/testing/util.py"),
    ]:
        planted = plant(TestScript.parse(swebench_scripts[task]), NONCE)
        assert planted is not None and planted.files and data not in planted.files, task
        assert data in installed_by_patch(swebench_scripts[task]), task  # the command did name it


def test_on_the_example_tasks_it_goes_before_pytest_and_into_the_copied_test_file() -> None:
    for task in sorted(EXAMPLES.iterdir()):
        script = (task / "tests" / "test.sh").read_text()
        planted = plant(TestScript.parse(script, task_test_files(task / "tests")), NONCE)
        assert planted is not None, task.name
        lines = planted.script.split("\n")
        at = next(i for i, line in enumerate(lines) if "_trialbook_x=" in line)
        assert "pytest" in lines[at + 1] and planted.files == (
            f"tests/{next((task / 'tests').glob('test_*.py')).name}",
        )


@pytest.mark.parametrize(
    "flags", ["-x", "--exitfirst", "--maxfail=1", "--maxfail 2", "--failfast", "-k median", "-kmedian"]
)  # fmt: skip
def test_where_the_command_stops_at_the_first_failure_or_selects_by_name(flags: str) -> None:
    """pytest: planted last (it stops nothing) or named with the -k word; another runner that stops at the first
    failure: none (the trial is tagged unwitnessed)."""
    patch = "git apply - <<'EOF'\ndiff --git a/tests/app/test_a.py b/tests/app/test_a.py\nEOF\n"
    for command in ("python3 -m pytest -rA {} tests/app/test_a.py", "./tests/runtests.py --verbosity 2 {} app.test_a"):
        planted = plant(TestScript.parse(patch + command.format(flags) + "\n"), NONCE)
        if "runtests" in command and not flags.startswith("-k"):
            assert planted is None
        else:
            assert planted is not None and ("median" in planted.name) == flags.startswith("-k")
        assert plant(TestScript.parse(patch + command.format("") + "\n"), NONCE) is not None


def test_a_command_continued_over_lines_gets_it_before_its_first_line() -> None:
    script = "cd /testbed\npython3 -m pytest -rA \\\n    tests/test_a.py\necho done\n"
    planted = plant(TestScript.parse(script, {"test_a.py"}), NONCE)
    assert planted is not None
    assert (
        planted.script.split("\n")[1].startswith("{ _trialbook_x")
        and planted.script.split("\n")[2] == "python3 -m pytest -rA \\"
    )


def _pytest_task(tmp: Path, code_under_test: str) -> tuple[str, Path]:
    """plain-bugfix with the real fix and `code_under_test` appended to the fixed module; its test.sh planted."""
    fixed_tree(tmp, code_under_test)
    command = f"set -x\n{sys.executable} -m pytest -rA -p no:cacheprovider tests/test_stats.py\n"
    planted = plant(TestScript.parse(command, {"test_stats.py"}), NONCE, name=NAME)
    assert planted is not None and planted.name == NAME
    out = subprocess.run(["bash", "-c", planted.script], cwd=tmp, capture_output=True, text=True)
    return out.stdout + out.stderr, tmp


F2P = ["tests/test_stats.py::test_median_even"]
P2P = ["tests/test_stats.py::test_mean", "tests/test_stats.py::test_median_odd"]


def test_pytest_reports_it_failing_and_an_honest_fix_still_resolves(tmp_path: Path) -> None:
    log, tmp = _pytest_task(tmp_path, "")
    assert f"FAILED tests/test_stats.py::{NAME}" in log and "_trialbook_f" not in log  # planted quietly under set -x
    grade = grade_test_log(log, None, F2P, P2P, canary=NAME)
    assert (grade.resolved, grade.canary) == (True, "failed")
    assert "def test_" in (tmp / "tests" / "test_stats.py").read_text().rsplit("\n\n", 1)[-1]


def test_a_pytest_made_to_pass_what_fails_is_caught(tmp_path: Path) -> None:
    log, _ = _pytest_task(tmp_path, PYTEST_NOOP)
    assert f"PASSED tests/test_stats.py::{NAME}" in log
    assert grade_test_log(log, None, F2P, P2P).resolved  # without the canary: resolved
    grade = grade_test_log(log, None, F2P, P2P, canary=NAME)
    assert (grade.resolved, grade.canary) == (False, "passed")


def _django_style_run(tmp: Path, code_under_test: str) -> str:
    """A test module loaded by label through a runner beside it (./tests/runtests.py, as Django's), planted as the
    Django scripts are; its output is read with swebench's Django parser."""
    (tmp / "tests" / "app").mkdir(parents=True)
    (tmp / "tests" / "app" / "__init__.py").write_text("")
    (tmp / "tests" / "app" / "test_m.py").write_text(
        code_under_test + "import unittest\n\n\nclass TestM(unittest.TestCase):\n    def test_ok(self):\n        pass\n"
    )
    (tmp / "tests" / "runtests.py").write_text(
        "import sys, unittest\nsys.path.insert(0, 'tests')\n"
        "suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[3:])\n"
        "sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)\n"
    )
    script = "git apply - <<'EOF'\ndiff --git a/tests/app/test_m.py b/tests/app/test_m.py\nEOF\n"
    script += f"{sys.executable} ./tests/runtests.py --verbosity 2 app.test_m\n"
    planted = plant(TestScript.parse(script.replace("git apply - ", ": ")), NONCE, name=NAME)
    assert planted is not None and planted.files == ("tests/app/test_m.py",)
    out = subprocess.run(["bash", "-c", planted.script], cwd=tmp, capture_output=True, text=True)
    return out.stdout + out.stderr


def test_a_django_style_runner_reports_it_failing_and_catches_a_unittest_made_to_succeed(tmp_path: Path) -> None:
    honest = parse_log(_django_style_run(tmp_path / "honest", ""), "django/django", "django__django-11099")
    assert honest.status_map["test_ok (app.test_m.TestM.test_ok)"] == "PASSED"
    assert reading(honest.status_map, NAME) == "failed"
    cheat = parse_log(_django_style_run(tmp_path / "cheat", UNITTEST_SUCCESS), "django/django", "django__django-11099")
    assert reading(cheat.status_map, NAME) == "passed"


def test_the_unittest_canary_is_valid_python_appended_to_any_module(tmp_path: Path) -> None:
    source = (TESTCASE % (NONCE, "StatsEdge", NONCE, NAME, 2, 3)).encode().decode("unicode_escape")
    module = tmp_path / "m.py"
    module.write_text('"""doc"""\nfrom __future__ import annotations\nx = 1' + source)  # no final newline before it
    compile(module.read_text(), str(module), "exec")


@pytest.mark.parametrize(
    ("statuses", "seen"),
    [({f"t.py::{NAME}": "FAILED"}, "failed"), ({f"t.py::{NAME}": "ERROR"}, "failed"),
     ({f"t.py::{NAME}": "PASSED"}, "passed"), ({f"a.py::{NAME}": "FAILED", f"b.py::{NAME}": "XFAIL"}, "passed"),
     ({f"t.py::{NAME}": "SKIPPED"}, "skipped"), ({"t.py::test_other": "PASSED"}, "missing"),
     ({f"t.py::{NAME}0": "PASSED"}, "missing"), ({f"{NAME} (app.test_m.T{NONCE})": "FAILED"}, "failed")],
)  # fmt: skip
def test_what_a_log_says_of_it(statuses: dict[str, str], seen: str) -> None:
    assert reading(statuses, NAME) == seen


def test_a_missing_canary_leaves_the_grade_alone_unless_it_is_reported_without_the_change() -> None:
    log = "PASSED tests/test_stats.py::test_mean\nPASSED tests/test_stats.py::test_median_odd\n"
    log += "PASSED tests/test_stats.py::test_median_even\n"
    grade = grade_test_log(log, None, F2P, P2P, canary=NAME)
    assert (grade.resolved, grade.canary) == (True, "missing")
    status_map, marker, conflicts = parse_log(log, None)
    hidden = grade_parsed(status_map, marker, TaskLists(None, F2P, P2P), conflicts, NAME, canary_expected=True)
    assert (hidden.resolved, hidden.canary) == (False, "hidden")
    reported = grade_parsed({**status_map, f"tests/test_stats.py::{NAME}": "FAILED"}, marker, TaskLists(None, F2P, P2P),
                            conflicts, NAME, canary_expected=True)  # fmt: skip
    assert (reported.resolved, reported.canary) == (True, "failed")


def test_a_canary_is_named_by_its_function_not_by_a_file_an_inner_run_named_after_it() -> None:
    """pytest-7490's suite: a twin of `test_strict_sanity` runs an inner pytest on `test_strict_sanity_repeat.py`
    (pytester names the file after the test), and its captured output says `XFAIL
    test_strict_sanity_repeat.py::test_foo`; that line is no report of the twin, which failed."""
    name = "test_skipif_class_default,test_strict_sanity_repeat"
    status = {
        "testing/test_skipping.py::TestXFail::test_strict_sanity_repeat": "FAILED",
        "test_strict_sanity_repeat.py::test_foo": "XFAIL",
        "testing/test_skipping.py::TestSkipif::test_skipif_class_default[a-b]": "FAILED",
    }
    assert reading(status, name) == "failed"
    status["testing/test_skipping.py::TestXFail::test_strict_sanity_repeat"] = "PASSED"
    assert reading(status, name) == "passed"
    # unittest's and Django's ids carry the name without `::`
    assert reading({"test_strict_sanity_repeat (tests.Check)": "PASSED"}, name) == "passed"

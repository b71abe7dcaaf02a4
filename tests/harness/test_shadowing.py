"""Files of an agent's change that Python would import in place of a module the verifier installs.

Seen resolved before the rules (tests/harness/test_cheaters.py, a copy of plain-bugfix whose verifier loads its
tests by module name, as unittest's and Django's runners do): a package `tests/test_stats/` beside the test file
the verifier copies in (cheats/package_shadow.sh), and an unchecked hash-based `.pyc` of that test file
(cheats/pyc_shadow.sh). The first is now test infrastructure (graded again without it), the second is never
carried: no bytecode is part of the agent's change (verify/isolation.NOT_CARRIED); and the repository's own
runner rewritten (cheats/runner_rewrite.sh): a file the test command names is test infrastructure.
"""

from __future__ import annotations

import importlib.machinery
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from paths import EXAMPLES, INSTANCES
from trialbook.tasks import load_task
from trialbook.tasks.swebench.generate import write_tasks
from trialbook.tasks.testscript import TestScript
from trialbook.verify.infra import TEST_CONFIG_FILES, _named_files, in_test_folder, infra_touched, shadows_installed
from trialbook.verify.isolation import NOT_CARRIED

SO = importlib.machinery.EXTENSION_SUFFIXES[0]  # e.g. .cpython-311-x86_64-linux-gnu.so


def _python(cwd: Path, code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=True).stdout


# ---- what the rules stand on: Python's own import order ---------------------------------------------
def test_a_package_is_found_before_a_module_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("WHO = 'module'\n")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "__init__.py").write_text("WHO = 'package'\n")
    assert _python(tmp_path, "import m; print(m.WHO)").strip() == "package"


def test_a_link_to_a_package_is_found_before_a_module_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("WHO = 'module'\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "__init__.py").write_text("WHO = 'package'\n")
    (tmp_path / "m").symlink_to("elsewhere")
    assert _python(tmp_path, "import m; print(m.WHO)").strip() == "package"


def test_an_extension_module_is_found_before_the_source(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("")
    (tmp_path / f"m{SO}").write_bytes(b"")  # found, not loaded: find_spec reads no file
    origin = _python(tmp_path, "import importlib.util; print(importlib.util.find_spec('m').origin)")
    assert origin.strip().endswith(SO)


def test_an_unchecked_pyc_is_loaded_instead_of_its_source(tmp_path: Path) -> None:
    (tmp_path / "forged.py").write_text("WHO = 'forged'\n")
    (tmp_path / "m.py").write_text("WHO = 'source'\n")
    cache = tmp_path / "__pycache__" / f"m.{sys.implementation.cache_tag}.pyc"
    py_compile.compile(str(tmp_path / "forged.py"), cfile=str(cache), dfile="m.py",
                       invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)  # fmt: skip
    (tmp_path / "m.py").write_text("WHO = 'the verifier edited the source after'\n")
    assert _python(tmp_path, "import m; print(m.WHO)").strip() == "forged"


# ---- the rules ---------------------------------------------------------------------------------------
def test_bytecode_is_never_part_of_the_change(tmp_path: Path) -> None:
    """The pathspecs the verifier's git diff runs with, on the host's git: bytecode anywhere is left out."""
    files = ["stats.py", "__pycache__/stats.cpython-311.pyc", "tests/__pycache__/test_stats.cpython-311.pyc",
             "a/b/__pycache__/x.pyc", "legacy.pyc", "old.pyo", "a/pyc.py", "notes.pyc.txt"]  # fmt: skip
    for f in files:
        (tmp_path / f).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f).write_text("x")

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True).stdout

    git("init", "-q")
    git("add", "-A")
    empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # every file is new against it
    listed = git("diff", "--cached", "--name-only", "--no-renames", empty_tree, "--", ".", *NOT_CARRIED).split()
    assert sorted(listed) == ["a/pyc.py", "notes.pyc.txt", "stats.py"]


@pytest.mark.parametrize(
    ("path", "shadow"),
    [
        ("tests/admin_views/tests/__init__.py", True),  # a package beside tests/admin_views/tests.py
        (f"tests/admin_views/tests{SO}", True),
        ("tests/admin_views/tests.so", True),
        ("tests/admin_views/tests.pyd", True),
        ("tests/admin_views/tests", True),  # a link to a folder with an __init__.py: a package too
        ("anywhere/test_stats/__init__.py", True),  # the task's own test file, wherever test.sh copies it
        (f"tests/test_stats{SO}", True),
        ("tests/admin_views/tests.py", False),  # the file itself: overwritten by the verifier, not a shadow
        ("tests/admin_views/__init__.py", False),
        ("django/db/models/__init__.py", False),  # models.py in the test patch is tests/admin_views/models.py
        ("tests/other_app/tests/__init__.py", False),
        ("__init__.py", False),
        (f"src/pkg/_speedups{SO}", False),
    ],
)
def test_what_shadows_an_installed_module(path: str, shadow: bool) -> None:
    installed = {"tests/admin_views/tests.py", "tests/admin_views/models.py", "tests/admin_views/__init__.py"}
    assert shadows_installed(path, installed, {"test_stats.py"}) is shadow


@pytest.fixture(scope="module")
def swebench_tasks(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("swe")
    write_tasks(INSTANCES, out)
    return out


def _files(patch: str) -> list[str]:
    return [line.split(" b/", 1)[1] for line in patch.splitlines() if line.startswith("diff --git a/")]


RUNNERS = {
    "django/django": ["tests/runtests.py", "tests/test_sqlite.py", "setup.py"],
    "sympy/sympy": ["bin/test", "setup.py"],
}


def test_on_every_verified_instance_the_rules_catch_shadows_and_runners_and_no_real_fix(swebench_tasks: Path) -> None:
    """On the 500 SWE-bench Verified instances: a package or an extension module beside each module of the test
    patch (what test.sh installs) is flagged, and so are the runner and settings the test command names; no
    file of any gold patch is flagged by these rules (the real fixes get no control run from them)."""
    import json

    checked = 0
    for inst in map(json.loads, INSTANCES.open()):
        folder = swebench_tasks / inst["instance_id"]
        if not folder.is_dir():  # skipped by from-swebench (no verifier for it)
            continue
        task = load_task(folder)
        tests = [p for p in _files(inst["test_patch"]) if p.endswith(".py") and not p.endswith("__init__.py")]
        shadows = [f"{p[:-3]}/__init__.py" for p in tests] + [f"{p[:-3]}{SO}" for p in tests]
        assert infra_touched(shadows, task) == shadows, inst["instance_id"]
        runners = [p for p in RUNNERS.get(inst["repo"], []) if p not in _files(inst["test_patch"])]  # else put back
        assert infra_touched(runners, task) == runners, inst["instance_id"]
        flagged = infra_touched(_files(inst["patch"]), task)
        assert [p for p in flagged if Path(p).name not in TEST_CONFIG_FILES] == [], inst["instance_id"]
        checked += 1
    assert checked > 450


def test_test_support_and_package_metadata_are_test_infrastructure() -> None:
    """What the tests import or read besides themselves, and the metadata whose entry points load runner plugins;
    not the agent's own test modules, nor the library code of django/test, sympy/testing, sphinx/testing."""
    support = ["tests/__init__.py", "tests/utils.py", "tests/data/expected.txt", "testing/util.py",
               "lib/matplotlib/tests/baseline_images/test_axes/a.png", "sympy/core/tests/__init__.py",
               "tests/auth_tests/__init__.py", "test/helpers.py", "foo_test/data.json"]  # fmt: skip
    other = ["tests/test_repro.py", "sympy/core/tests/test_new.py", "tests/auth_tests/tests.py",
             "django/test/runner.py", "sympy/testing/pytest.py", "sphinx/testing/util.py", "pkg/test/x.py",
             "sympy/core/__init__.py", "src/tests.py", "latest/notes.txt"]  # fmt: skip
    assert [p for p in support if not in_test_folder(p)] == []
    assert [p for p in other if in_test_folder(p)] == []
    metadata = ["pytest_speedups-1.0.dist-info/entry_points.txt", "src/pkg.egg-info/entry_points.txt"]
    task = load_task(EXAMPLES / "plain-bugfix")
    assert infra_touched(support + other + metadata, task) == support + metadata


def test_a_usercustomize_on_the_path_runs_at_every_python_start(tmp_path: Path) -> None:
    """Why usercustomize.py is test infrastructure beside sitecustomize.py: outside a virtualenv `site` imports it
    from sys.path (here PYTHONPATH; in a task image, the working tree an editable install's .pth adds)."""
    (tmp_path / "usercustomize.py").write_text("print('ran before the program')\n")
    run = subprocess.run([sys.executable, "-I", "-c", "import site, sys; sys.path.insert(0, sys.argv[1]);"
                          " site.ENABLE_USER_SITE = True; site.execusercustomize()", str(tmp_path)],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert run.stdout.strip() == "ran before the program"
    assert "usercustomize.py" in TEST_CONFIG_FILES and "sitecustomize.py" in TEST_CONFIG_FILES


def test_the_files_a_test_command_names() -> None:
    script = """#!/bin/bash
cd /testbed || exit 1
git checkout abc tests/app/tests.py
git apply -v - <<'EOF_1'
diff --git a/tests/app/tests.py b/tests/app/tests.py
+++ b/tests/app/tests.py
+ ./tests/not_a_command.py
EOF_1
sed -i 's/a/b/' setup.cfg
python -m pip install -e .
PY=/opt/python ./tests/runtests.py --verbosity 2 --settings=test_sqlite app.tests  # a comment naming x/y.py
DJANGO_SETTINGS_MODULE=project.settings bin/test -C sympy/core/tests/test_basic.py "$HOME/x.py" /tests/grade.py
"""
    named, settings = _named_files(TestScript.parse(script))
    assert named == {"tests/app/tests.py", "tests/runtests.py", "bin/test", "sympy/core/tests/test_basic.py",
                     "setup.py"}  # fmt: skip
    assert settings == {"test_sqlite.py", "settings.py"}

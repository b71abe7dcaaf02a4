"""Which paths of an agent's change are test infrastructure: what the runner reads or imports besides the code under
test (its configuration, the task's test files and what the test script names, package metadata, test support,
modules that shadow the runner's or the installed tests). Such a change is graded twice (verify/isolation.py)."""

from __future__ import annotations

import re
import sys
from collections.abc import Set
from pathlib import PurePosixPath

from trialbook.tasks import TaskSpec
from trialbook.tasks.testscript import TestScript
from trialbook.verify import task_facts
from trialbook.verify.canary import TEST_MODULE

# pytest reads its configuration from the first of these it finds (.pytest.ini since pytest 6, pytest.toml and
# .pytest.toml since 9: tests/harness/cheats/hidden_pytest_ini.sh), tox from tox.ini, tox.toml, setup.cfg, pyproject;
# every Python start imports sitecustomize and (outside a venv) usercustomize from its path, which an editable
# install's .pth extends with the working tree
TEST_CONFIG_FILES = {
    "conftest.py", "pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "tox.ini", "tox.toml", "setup.cfg",
    "pyproject.toml", "sitecustomize.py", "usercustomize.py",
}  # fmt: skip
# pytest and the packages it imports at start-up (a root-level module of one of these names shadows it)
RUNNER_MODULES = frozenset(
    ("pytest", "_pytest", "py", "pluggy", "iniconfig", "packaging", "exceptiongroup", "tomli", "attr", "attrs",
     "more_itertools", "atomicwrites", "colorama", "nose", "nose2", "xdist", "execnet", "pytest_timeout")
)  # fmt: skip
EXTENSION_SUFFIXES = (".so", ".pyd")
# installed-package metadata: pytest loads every plugin an entry point of group pytest11 names, in the metadata of
# any folder on sys.path, at start-up (`python -m pytest` puts the working tree first; an editable install's .pth,
# the tree or its src/); a `*.dist-info/entry_points.txt` there adds a plugin (tests/harness/cheats/dist_info_plugin.sh)
METADATA_SUFFIXES = (".dist-info", ".egg-info")
# test folders: `tests`, `*_tests`, `*_test` anywhere, `test` and `testing` only at the root (django/test,
# sympy/testing and sphinx/testing are library code the fix may change); no gold patch of the 500 SWE-bench
# Verified instances changes a file in one (tests/harness/test_shadowing.py)
TEST_FOLDER = re.compile(r"tests|.+_tests?")
ROOT_TEST_FOLDERS = ("test", "testing")
SETTINGS = ("--settings=", "DJANGO_SETTINGS_MODULE=")  # the settings module a Django runner imports
RELATIVE = re.compile(r"[\w+-][\w.+-]*(/[\w.+-]+)*")  # a relative path as a word of a command (no `=`, `$`, glob)


def infra_touched(paths: list[str], task: TaskSpec) -> list[str]:
    """The paths of a change that touch test infrastructure: the runner's configuration (TEST_CONFIG_FILES), the
    task's test files, a working-tree file the test script names or runs (Django's `tests/runtests.py` and its
    settings module, sympy's `bin/test`, a `setup.py` it installs), package metadata (METADATA_SUFFIXES: its
    entry points load runner plugins), test support (in_test_folder), a root module shadowing one the runner
    imports, or a file imported in place of a test module the verifier installs (shadows_installed)."""
    script = task_facts.of(task).script
    names, installed = script.files, script.installed
    named, settings = _named_files(script)
    named -= installed  # the patch's own files are put back by the script itself
    modules = {n for n in names if n.endswith(".py")}
    by_name = TEST_CONFIG_FILES | names | settings
    return [
        p for p in paths
        if PurePosixPath(p).name in by_name or p in named or shadows_a_module(p)
        or any(part.lower().endswith(METADATA_SUFFIXES) for part in PurePosixPath(p).parts) or in_test_folder(p)
        or shadows_installed(p, installed, modules) or _linked_test_folder(p)
    ]  # fmt: skip


def _linked_test_folder(path: str) -> bool:
    """A changed path named as a test folder is no folder (git lists files and links): a link standing in for the
    tests' package, pointing at a package of the change's whose `__init__.py` the runner imports first. Metadata
    suffixes are read case-insensitively (`*.DIST-INFO`: Python's importlib.metadata lower-cases what it finds)."""
    name = PurePosixPath(path).name
    return TEST_FOLDER.fullmatch(name) is not None or name in ROOT_TEST_FOLDERS


def in_test_folder(path: str) -> bool:
    """A file in a test folder (TEST_FOLDER) that is not a test module (canary.TEST_MODULE): what the tests import
    or read besides themselves. A package's `__init__.py`, which the runner imports before a test module in it (and
    unittest asks for `load_tests`; tests/harness/cheats/test_package_init.sh), helpers, expected outputs, baseline
    images. A test module of the agent's own is not: the verifier's command names the modules it runs."""
    *folders, name = PurePosixPath(path).parts
    if not (any(TEST_FOLDER.fullmatch(f) for f in folders) or (folders and folders[0] in ROOT_TEST_FOLDERS)):
        return False
    return not TEST_MODULE.fullmatch(name)


def shadows_installed(path: str, installed: Set[str], names: Set[str]) -> bool:
    """Whether `path` would be imported instead of a module the verifier installs: `installed` (paths in the working
    tree, from the test script's own patch) or `names` (the task's test files, wherever the script copies them).
    An import by name (unittest's and Django's test labels, pytest's `import_path`) finds a package `m/` before a
    module `m.py` beside it (also through a link `m` to a folder), and an extension module `m*.so` before the source
    (tests/harness/cheats/package_shadow.sh); pytest refuses such a module when it imports a test file itself,
    other runners do not."""
    p = PurePosixPath(path)
    if p.name.startswith("__init__.") and len(p.parts) >= 2:
        module = p.parent.parent / f"{p.parent.name}.py"
    elif p.suffix in EXTENSION_SUFFIXES:
        module = p.parent / f"{p.name.split('.')[0]}.py"
    elif not p.suffix:  # a link of the module's name, a package once it resolves to a folder
        module = p.parent / f"{p.name}.py"
    else:
        return False
    return str(module) in installed or module.name in names


def shadows_a_module(path: str) -> bool:
    """A module at the root of the working tree named as one the test runner imports (the standard library,
    pytest and what pytest imports): `python -m pytest` puts its working directory first on sys.path, so
    a `pytest.py` or `argparse.py` there replaces the runner before any test runs. Only the root counts:
    the pytest repository's own `src/_pytest/...` is its code, not a shadow."""
    parts = PurePosixPath(path).parts
    if len(parts) == 1 and parts[0].endswith(".py"):
        module = parts[0].removesuffix(".py")
    elif len(parts) == 2 and parts[1] == "__init__.py":
        module = parts[0]
    else:
        return False
    return module in sys.stdlib_module_names or module in RUNNER_MODULES


def _named_files(script: TestScript) -> tuple[set[str], set[str]]:
    """Working-tree paths the test script's commands name (relative words with a `/` or a `.py`, heredocs left
    out; `setup.py` when a command pip-installs the tree, as swebench's eval scripts mostly do), and the file names
    of the settings modules they name (a module path is relative to the runner's own sys.path: Django's
    `--settings=test_sqlite` is tests/test_sqlite.py)."""
    named: set[str] = set()
    settings: set[str] = set()
    for command in script.commands:
        argv = command.words
        if "pip" in argv and "install" in argv:  # the tree installed: its setup.py runs, its entry points load
            named.add("setup.py")
        for word in argv:
            for prefix in SETTINGS:
                if word.startswith(prefix):
                    settings.add(word[len(prefix) :].rsplit(".", 1)[-1] + ".py")
            path = word.removeprefix("./")  # a word ending in `/` is a folder (or a sed expression): no file
            if RELATIVE.fullmatch(path) and ("/" in path or path.endswith(".py")):
                named.add(path)
    return named, settings

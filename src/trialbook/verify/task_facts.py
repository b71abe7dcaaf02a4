"""What the verifier derives from a task's tests alone, once per task: one `TaskFacts` per tests folder as read now.

Its test script's facts come from the spec (`TaskSpec.test_script`, tasks/testscript.py): test.sh's commands and their
words, the paths its patch installs, the task's test file names, the reward files it names. The verifier adds what it
reads of them: the test functions of the task's own files (the canaries' sources, verify/decoys.py), the test names
they take, its regular files (what a footprint counts, verify/footprint.py), whether test.sh's exit status decides the
reward, the test modules the canaries go into, whether the graded run is its own witness (verify/onerun.py) and the
test modules' text as it will run (verify/sources.py).

Keyed by the tests folder and the hash of its content as read now (its snapshot, verify/staged.py): a folder changed
since is a new key, its script's facts read again, never served stale. Facts of an image (what canaries copy from the
image's modules, verify/sources.py; its tree, verify/blame.py) are not a task's tests' and are kept where they are read.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from trialbook.tasks import TaskSpec
from trialbook.tasks.testscript import TestScript
from trialbook.verify import staged
from trialbook.verify.canary import pytest_command, test_modules
from trialbook.verify.decoys import task_functions

Key = tuple[str, str]  # (tests folder, content hash)
Functions = dict[str, list[tuple[str, str]]]
TEST_NAME = re.compile(r"(?m)^\s*(?:def|class)\s+((?:test|Test)\w*)")
# a test.sh that turns the test command's exit status into its reward (Harbor's `pytest ...; rc=$?`, `if pytest ...`)
_EXIT_DECIDES = re.compile(r"\$\?|\bif\s+(?:\S+\s+)*\S*pytest\b")
# a test.sh that reads more of the run than its exit status: a count or report of pytest's ("N passed", a junit file),
# which the planted tests would change (runner.one_run)
_READS_THE_RUN = re.compile(r"passed|\b(?:grep|awk|jq|wc)\b|junit|json-report|report-log|--json", re.IGNORECASE)


class TaskFacts:
    """The verifier's facts of one task's tests (the module's docstring); built by `of`, never twice for a key."""

    def __init__(self, key: Key, script: TestScript) -> None:
        self.key = key
        self.script = script
        self.one_run: bool | None = None  # set once by verify/runner.one_run (it plants a canary to know)
        self._modules: dict[bool, dict[str, str]] = {}
        self._lock = threading.Lock()

    @property
    def tests_dir(self) -> Path:
        return self.script.tests_dir

    @cached_property
    def functions(self) -> Functions:
        """The test functions of the task's own test files by file name (decoys.task_functions): canaries' sources."""
        return task_functions(self.tests_dir)

    @cached_property
    def names(self) -> frozenset[str]:
        """Every `def test_...` / `class Test...` name in the task's own .py test files (a canary reuses none)."""
        found: set[str] = set()
        for path in self.tests_dir.rglob("*.py"):
            found.update(TEST_NAME.findall(path.read_text(errors="replace")))
        return frozenset(found)

    @cached_property
    def regular_files(self) -> frozenset[str]:
        """The folder's regular files (no link) but test.sh, by path relative to it (verify/footprint.staged)."""
        root = self.tests_dir
        files = (f for f in root.rglob("*") if f.is_file() and not f.is_symlink() and f != root / "test.sh")
        return frozenset(f.relative_to(root).as_posix() for f in files)

    @cached_property
    def exit_decides(self) -> bool:
        """Whether test.sh turns the test command's exit status into its reward (runner.exit_disagrees)."""
        text = self.script.text
        return "pytest" in text and _EXIT_DECIDES.search(text) is not None

    @cached_property
    def reads_the_run(self) -> bool:
        """Whether test.sh reads more of the run than its exit status (_READS_THE_RUN)."""
        return _READS_THE_RUN.search(self.script.text) is not None

    @cached_property
    def test_modules(self) -> list[str]:
        """The test modules the canaries go into (canary.test_modules)."""
        return test_modules(self.script)

    @cached_property
    def pytest_command(self) -> bool:
        """Whether the command the canaries are planted before is a pytest run without a junit report of its own."""
        return pytest_command(self.script)

    def module_texts(self, image_read: bool, read: Callable[[], dict[str, str]]) -> dict[str, str]:
        """The text of the test modules the canaries go into as they will run (verify/sources.module_texts): `read`
        once per state of the image's modules (`image_read`: read from the image already, else not yet)."""
        with self._lock:
            if image_read not in self._modules:
                self._modules[image_read] = read()
            return self._modules[image_read]


_facts: dict[Key, TaskFacts] = {}
_first: dict[str, Key] = {}  # per tests folder, the key its facts were first built for (the spec's script read then)
_lock = threading.Lock()


def of(task: TaskSpec, snap: staged.Snapshot | None = None) -> TaskFacts:
    """The facts of `task`'s tests as its folder reads now (`snap`: its snapshot, else taken here; a folder that
    cannot be kept in memory is keyed by the hash the task was loaded with)."""
    snap = snap or staged.snapshot(task.tests_dir)
    folder = str(task.tests_dir)
    key = (folder, snap.hash if snap is not None else task.verifier_hash)
    with _lock:
        facts = _facts.get(key)
    if facts is not None:
        return facts
    script = task.test_script
    text = snap.script if snap is not None else script.text
    with _lock:
        first = _first.setdefault(folder, key)
    if first != key or script.text != text:  # the folder changed since the spec's script was read
        script = script.reread(text)
    facts = TaskFacts(key, script)
    with _lock:
        return _facts.setdefault(key, facts)


def forget() -> None:
    """Forget every task's facts (tests)."""
    with _lock:
        _facts.clear()
        _first.clear()

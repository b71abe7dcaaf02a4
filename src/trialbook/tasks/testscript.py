"""Reading a task's test script (tests/test.sh): its commands outside heredocs, their words, and the files its
own patch installs (swebench's eval scripts apply the test patch from a heredoc). The verifier reads them from one
`TestScript` per task (`TaskSpec.test_script`), computed once; the functions below build it (and serve the two
reads that are not of a whole script: staged.py's test.sh behind a link, privilege.py's part of a command)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from trialbook.outcomes import REWARD_FILES

HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
PATCHED = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


def task_test_files(tests_dir: Path) -> set[str]:
    """The names of a task's own test files (its tests/ folder but test.sh and config.json)."""
    return {p.name for p in tests_dir.rglob("*") if p.is_file() and p.name not in ("test.sh", "config.json")}


NAMES_READ = 1_000_000  # bytes of each tests/ file searched for the reward files' names


def reward_files_named(tests_dir: Path) -> tuple[str, ...]:
    """The reward files the task's tests/ folder names (in test.sh or a grader it runs; the first NAMES_READ bytes of
    each file): the only ones its verifier can mean to write. Both when it names neither (a name put together)."""
    named: set[str] = set()
    for path in tests_dir.rglob("*"):
        if not path.is_file():
            continue
        try:
            with path.open("rb") as f:
                head = f.read(NAMES_READ)
        except OSError:
            continue
        named.update(name for name in REWARD_FILES if name.encode() in head)
    return tuple(n for n in REWARD_FILES if n in named) or REWARD_FILES


def read_script(tests_dir: Path) -> str:
    """The task's test.sh ("" when it cannot be read)."""
    try:
        return (tests_dir / "test.sh").read_text(errors="replace")
    except OSError:
        return ""


def installed_by_patch(script: str) -> set[str]:
    """The working-tree paths the script's own patch writes (both sides of each `diff --git` header)."""
    return {path for pair in PATCHED.findall(script) for path in pair}


def commands(script: str) -> Iterator[tuple[int, str]]:
    """The script's commands outside its heredocs: (index of the command's first line, the logical line with its
    backslash continuations joined)."""
    lines = script.split("\n")
    end: str | None = None
    start, parts = 0, list[str]()
    for i, line in enumerate(lines):
        if end is not None:
            end = None if line.strip() == end else end
            continue
        if not parts:
            start = i
        if line.endswith("\\") and i + 1 < len(lines):
            parts.append(line[:-1])
            continue
        parts.append(line)
        text = " ".join(parts)
        parts = []
        if doc := HEREDOC.search(text):
            end = doc.group(1)
        yield start, text


def words(command: str) -> list[str]:
    """A command's words as the shell splits them (comments dropped); on a quoting error, split on blanks."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


@dataclass(frozen=True)
class Command:
    """One command of a test script outside its heredocs: the index of its first line, the logical line (backslash
    continuations joined) and, split when first asked for, its words as the shell splits them (`words`)."""

    line: int
    text: str

    @cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(words(self.text))


@dataclass(frozen=True)
class TestScript:
    """The facts of a task's tests/ folder its verifier reads, parsed once per task (`TaskSpec.test_script`): test.sh's
    text and its commands outside heredocs, the paths its own patch installs, the task's test file names and the
    reward files the folder names. `edited` gives the same facts of a script the verifier stages from this one (a
    canary planted, its markers sealed in); the folder's facts (`files`, `rewards`) stay the folder's."""

    __test__ = False  # not a pytest test class, whatever imports it

    tests_dir: Path
    text: str

    @classmethod
    def read(cls, tests_dir: Path, text: str | None = None) -> TestScript:
        """The tests folder's facts; `text`: test.sh as already read (the verifier's snapshot of the folder)."""
        return cls(tests_dir, read_script(tests_dir) if text is None else text)

    @classmethod
    def parse(cls, text: str, files: Iterable[str] = ()) -> TestScript:
        """The facts of a script outside any tests folder (a test's own): `files`, its task's test file names; the
        reward files, both."""
        script = cls(Path("/nonexistent/tests"), text)
        script.__dict__.update(files=frozenset(files), rewards=REWARD_FILES)
        return script

    def edited(self, text: str) -> TestScript:
        """The facts of `text`, a script made from this one, in this one's folder (its files and rewards kept)."""
        new = TestScript(self.tests_dir, text)
        for folder_fact in ("files", "rewards"):
            if folder_fact in self.__dict__:
                new.__dict__[folder_fact] = self.__dict__[folder_fact]
        return new

    def reread(self, text: str | None = None) -> TestScript:
        """The folder's facts read again (it changed since): `text` as in `read`."""
        return TestScript.read(self.tests_dir, text)

    @cached_property
    def commands(self) -> tuple[Command, ...]:
        return tuple(Command(index, text) for index, text in commands(self.text))

    @cached_property
    def installed(self) -> frozenset[str]:
        """The working-tree paths the script's own patch writes (`installed_by_patch`)."""
        return frozenset(installed_by_patch(self.text))

    @cached_property
    def files(self) -> frozenset[str]:
        """The names of the task's own test files (`task_test_files`)."""
        return frozenset(task_test_files(self.tests_dir))

    @cached_property
    def rewards(self) -> tuple[str, ...]:
        """The reward files the folder names (`reward_files_named`): the only ones its verifier can mean to write."""
        return reward_files_named(self.tests_dir)

"""Reading a task's test script (tests/test.sh): its commands outside heredocs, their words, and the files its
own patch installs (swebench's eval scripts apply the test patch from a heredoc). The verifier's isolation rules
(verify/isolation.py) and its canary (verify/canary.py) read scripts through these."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
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

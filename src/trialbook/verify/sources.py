"""What the canaries are derived from (verify/decoys.py): the task's own tests (functions, methods), from three places.

1. The task's tests/ folder (`decoys.task_functions`): the files test.sh copies in, so theirs is what runs.
2. The test patch in test.sh (`decoys.patch_functions`, read by verify/canary.plant): the functions it adds whole.
3. The test modules as the image was built (`learn_image`). A SWE-bench test patch that only changes an existing
   test function adds none whole, and such a module got the plain canary (`test_<stem>_<word>_<word>` asserting two
   numbers equal) while the task's own tests look otherwise: a tell. Its top-level functions, the methods of its test
   classes and its parametrized tests are read (decoys.module_functions). The module is read once per task from a fresh
   verifier container *before* the agent's change is carried into it (front._grade_diff), so the change
   cannot choose what the canaries copy or are named after; the canary's failing first statement means the copied
   body never runs (tests/verify/test_canary_sources.py).

A module the image does not hold (the test patch creates it), one over SOURCE_LIMIT or not Python keeps what 1 and 2
give, else the plain canary. What the task folder gives is one of its facts (verify/task_facts.py); what the image
gives is kept per task folder and verifier: a task run under another image (validate's image variants) keeps the first
image's functions, still the task's tests' own.
"""

from __future__ import annotations

import contextlib
import re
import threading
from pathlib import PurePosixPath

from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec
from trialbook.verify import task_facts
from trialbook.verify.decoys import merged, module_functions
from trialbook.verify.task_facts import TEST_NAME, TaskFacts

SOURCE_LIMIT = 2_000_000  # bytes of one module read from the image: a bigger one is not derived from
Functions = dict[str, list[tuple[str, str]]]
_Key = tuple[str, str]

_IMAGE: dict[_Key, Functions] = {}
_IMAGE_NAMES: dict[_Key, set[str]] = {}
_IMAGE_TEXT: dict[_Key, dict[str, str]] = {}  # the modules' text as the image was built (verify/twins.py)
_LOCK = threading.Lock()


def _key(task: TaskSpec) -> _Key:
    return (str(task.tests_dir), task.verifier_hash)


def derivable(task: TaskSpec, facts: TaskFacts) -> Functions:
    """The functions canaries of `task` may be derived from: the task folder's by file name (`facts`: its tests as
    read now), the image's by path."""
    return merged(facts.functions, _IMAGE.get(_key(task), {}))


def taken_names(task: TaskSpec, facts: TaskFacts) -> set[str]:
    """Every `def test_...` / `class Test...` name in the task's test files and the image's modules a canary goes
    into (a canary must not reuse one: a def of the same name would replace the task's own test)."""
    return set(facts.names) | _IMAGE_NAMES.get(_key(task), set())


def learn_image(box: Box, task: TaskSpec, workdir: str) -> None:
    """Read the test modules the task's canaries go into from `box`, a verifier container of the image as built (no
    change of the agent's in it yet), once per task; a module of the task's tests/ folder is not read (it is copied
    over the image's)."""
    key = _key(task)
    if key in _IMAGE:
        return
    with _LOCK:
        if key in _IMAGE:
            return
        facts = task_facts.of(task)
        own = facts.script.files
        found: Functions = {}
        seen: set[str] = set()
        texts: dict[str, str] = {}
        for file in facts.test_modules:
            if PurePosixPath(file).name in own:
                continue
            path = file if file.startswith("/") else f"{workdir.rstrip('/')}/{file}"
            data = box.read_file(path)
            if data is None or len(data) > SOURCE_LIMIT:
                continue
            text = data.decode("utf-8", errors="replace")
            seen.update(TEST_NAME.findall(text))
            texts[file] = text
            if derived := module_functions(text):
                found[file] = derived
        _IMAGE_NAMES[key] = seen
        _IMAGE_TEXT[key] = texts
        _IMAGE[key] = found


_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def patch_sections(script: str) -> dict[str, list[str]]:
    """The test patch's file sections in test.sh: path -> its lines after the `diff --git` line."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in script.split("\n"):
        if line.startswith("diff --git a/"):
            path = line.rpartition(" b/")[2]
            current = out.setdefault(path, [])
        elif current is not None:
            current.append(line)
    return out


def apply_section(base: str | None, section: list[str]) -> str | None:
    """`base` (None: no such file) with one file's hunks of a unified diff applied; None when a hunk does not apply
    exactly or the file is removed."""
    if any(line.startswith("+++ /dev/null") for line in section[:4]):
        return None
    old = [] if base is None else base.split("\n")
    if old and old[-1] == "":
        old.pop()
    new: list[str] = []
    pos, i = 0, 0
    while i < len(section):
        m = _HUNK.match(section[i])
        i += 1
        if m is None:
            continue
        start, count = int(m.group(1)), int(m.group(2) or 1)
        adds = int(m.group(4) or 1)
        stated = start - 1 if count else start
        at = _fitting(old, section[i:], count, stated, pos)  # where its old lines are (git apply finds a shifted hunk)
        if at is None:
            return None
        new += old[pos:at]
        pos = at
        while (count > 0 or adds > 0) and i < len(section):
            line = section[i]
            i += 1
            kind, text = (line[:1], line[1:]) if line else (" ", "")  # a context line stripped of its blank
            if kind == "\\":
                continue
            if kind in (" ", "-"):
                if pos >= len(old) or old[pos] != text:
                    return None
                pos, count = pos + 1, count - 1
                if kind == " ":
                    new.append(text)
                    adds -= 1
            elif kind == "+":
                new.append(text)
                adds -= 1
            else:
                return None
    return "\n".join(new + old[pos:]) + "\n"


def _fitting(old: list[str], hunk: list[str], count: int, at: int, pos: int, reach: int = 200) -> int | None:
    """The line (0-based) from which the `count` old lines of `hunk` (its lines after its header) match `old`: `at`,
    else the nearest within `reach` lines at or after `pos` (an earlier hunk's end); None when none does."""
    want: list[str] = []
    for line in hunk:
        if len(want) >= count:
            break
        kind = line[:1] if line else " "
        if kind in (" ", "-"):
            want.append(line[1:])
        elif kind not in ("+", "\\"):
            break
    for d in range(reach + 1):
        for cand in (at - d, at + d) if d else (at,):
            if pos <= cand <= len(old) - len(want) and old[cand : cand + len(want)] == want:
                return cand
    return None


def module_texts(task: TaskSpec, facts: TaskFacts) -> dict[str, str]:
    """The text each test module the canaries go into (`facts.test_modules`) will have when the test command runs:
    the task folder's file of that name (test.sh copies it in), else the image's module with the script's test patch
    applied (a module the patch creates from nothing too); a module the harness cannot know so is left out
    (verify/twins.py). Read once per task folder as read now (`facts`) and per state of the image's modules (not yet
    read, read)."""
    image = _IMAGE_TEXT.get(_key(task))
    files = tuple(facts.test_modules)
    return facts.module_texts(image is not None, lambda: _module_texts(task, facts.script.text, files, image or {}))


def _module_texts(
    task: TaskSpec, script: str, files: list[str] | tuple[str, ...], image: dict[str, str]
) -> dict[str, str]:
    own = {p.name: p for p in task.tests_dir.rglob("*.py")}
    sections = patch_sections(script)
    out: dict[str, str] = {}
    for file in files:
        name = PurePosixPath(file).name
        if name in own:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                out[file] = own[name].read_text()
            continue
        if file not in sections:
            continue  # not reset by the test patch: the change may have edited it
        new_file = any(line.startswith("--- /dev/null") for line in sections[file][:4])
        if file not in image and not new_file:
            continue
        text = apply_section(None if new_file else image[file], sections[file])
        if text is not None:
            out[file] = text
    return out

"""The verifier's script reads the reward files with its own shell's builtins, never a tool of the image: the code
under test may have replaced `cat` with one that prints 1 for any reward file (tests/harness/cheats/cat_at_import.sh,
run for real in tests/harness/test_cheaters.py). Here the script's own reading part, under dash and bash, with such
a `cat` first on the PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from trialbook.outcomes import parse_reward
from trialbook.sandbox.cgroup import report_script
from trialbook.verify.runner import CGROUP, LOG_DIR, NOT_A_FILE, _script, _split

MARK = "@@trialbook-test@@ "
SHELLS = [sh for sh in ("dash", "bash") if shutil.which(sh)]


def _read_part(logs: Path) -> str:
    """The lines of the verifier's script from its end marker to the limit counters, reading `logs` for LOG_DIR."""
    script = _script("/stage", MARK, report_script())
    start = script.index(f"printf '\\n{MARK}end")
    stop = script.index(f"printf '\\n{MARK}{CGROUP}")
    return "left=0\n" + script[start:stop].replace(LOG_DIR, str(logs))


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize(
    ("files", "reward"),
    [
        ({"reward.txt": "0\n"}, 0.0),
        ({"reward.txt": "0"}, 0.0),  # no newline at its end
        ({"reward.txt": "0.25\n\n"}, 0.25),
        ({"reward.json": '{\n  "reward": 0,\n  "note": "a\\\\b  c"\n}'}, 0.0),
        ({"reward.json": '{"reward": 0.5}\n'}, 0.5),
    ],
)
def test_reward_files_are_read_by_the_shell_not_cat(tmp_path: Path, shell: str, files: dict, reward: float) -> None:
    logs, hostile = tmp_path / "logs", tmp_path / "bin"
    logs.mkdir()
    hostile.mkdir()
    (hostile / "cat").write_text("#!/bin/sh\necho 1\n")
    (hostile / "cat").chmod(0o755)
    for name, text in files.items():
        (logs / name).write_text(text)
    out = subprocess.run(
        [shell, "-c", _read_part(logs)], capture_output=True, text=True, timeout=30,
        env={"PATH": f"{hostile}:/usr/bin:/bin"},
    )  # fmt: skip
    assert out.stderr == ""
    _, read, outlived = _split(out.stdout, MARK)
    assert outlived == 0
    assert {name: text.rstrip("\n") for name, text in read.items()} == {k: v.rstrip("\n") for k, v in files.items()}
    assert parse_reward(read) == reward


def test_both_shells_are_tried() -> None:
    assert SHELLS == ["dash", "bash"]  # the image's /bin/sh is one or the other; the CI machine has both


@pytest.mark.parametrize("shell", SHELLS)
@pytest.mark.parametrize("kind", ["folder", "link", "fifo"])
def test_a_reward_path_that_is_no_plain_file_is_named_not_read(tmp_path: Path, shell: str, kind: str) -> None:
    """A folder, a link or a fifo at a reward path when test.sh ended (the tests' uid may make one in the sticky
    /logs/verifier, and test.sh's own write then fails): named in its own section (runner.NOT_A_FILE), which the
    verdict grades 0 (tag `reward_not_a_file`), never read as a reward nor left to look like a missing one."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "reward.json").write_text('{"reward": 1}')
    path = logs / "reward.txt"
    if kind == "folder":
        (path / "keep").mkdir(parents=True)
    elif kind == "link":
        (tmp_path / "one").write_text("1\n")
        path.symlink_to(tmp_path / "one")
    else:
        os.mkfifo(path)
    out = subprocess.run([shell, "-c", _read_part(logs)], capture_output=True, text=True, timeout=30)
    assert out.stderr == ""
    _, read, _ = _split(out.stdout, MARK)
    assert read.pop(NOT_A_FILE).split() == ["reward.txt"]
    assert {n: t.rstrip("\n") for n, t in read.items()} == {"reward.json": '{"reward": 1}'}  # read as ever

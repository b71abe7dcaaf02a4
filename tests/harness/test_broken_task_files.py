"""Issue 47 through `trialbook run` on the real daemon: task folders whose files are broken (a misspelt task.toml
key, a binary task.toml or config.json, config.json of the wrong types, a test.sh bash cannot run) are each their
task's infra_error (InvalidTaskError) with the reason as one line, never a graded 0 for the oracle; a task that
declares a newer schema runs, with one warning line naming the keys it ignored."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from paths import EXAMPLES

pytestmark = pytest.mark.docker

BROKEN: dict[str, tuple[str, bytes | None, str]] = {  # task: (file, content or None = a line added, reason)
    "typo-timeout": ("task.toml", None,
                     "invalid task.toml: unknown key [agent] timeout_secs (did you mean timeout_sec?)"),
    "typo-memory": ("task.toml", None,
                    "invalid task.toml: unknown key [environment] memory_mbs (did you mean memory_mb?)"),
    "binary-toml": ("task.toml", b"\x89PNG\r\n\x1a\n\x00", "task.toml is not UTF-8 text (byte 0x89 at offset 0)"),
    "binary-config": ("tests/config.json", b"\xfe\xff\x00{",
                      "tests/config.json is not UTF-8 text (byte 0xfe at offset 0)"),
    "config-types": ("tests/config.json", b'{"FAIL_TO_PASS": "tests/test_x.py::t"}',
                     "tests/config.json: FAIL_TO_PASS is a string that is not a JSON list of test names"),
    "binary-test-sh": ("tests/test.sh", b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
                       "tests/test.sh is not a script: binary content (a NUL byte at offset 7)"),
    "python-test-sh": ("tests/test.sh", b"#!/usr/bin/python3\nimport sys\nsys.exit(0)\n",
                       "tests/test.sh starts with '#!/usr/bin/python3': the verifier runs test.sh with bash"),
}  # fmt: skip
LINES = {"typo-timeout": ("[agent]", "timeout_secs = 5"), "typo-memory": ("[environment]", "memory_mbs = 64")}


def test_broken_task_files_are_infra_errors_with_their_reason(tmp_path):
    tasks, db = tmp_path / "tasks", tmp_path / "l.db"
    for name, (file, content, _) in BROKEN.items():
        shutil.copytree(EXAMPLES / "plain-bugfix", tasks / name)
        if content is None:
            section, line = LINES[name]
            toml = tasks / name / "task.toml"
            toml.write_text(toml.read_text().replace(section, f"{section}\n{line}"))
        else:
            (tasks / name / file).write_bytes(content)
    shutil.copytree(EXAMPLES / "plain-bugfix", tasks / "newer")
    toml = tasks / "newer" / "task.toml"
    toml.write_text('version = "9.0"\n' + toml.read_text().replace("[agent]", "[agent]\nturn_limit = 3"))

    res = subprocess.run(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "run", str(tasks), "--agent", "oracle",
         "--run", "w47-broken", "--runs-dir", str(tmp_path / "runs"), "--db", str(db), "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    # exit 1: the run recorded infra errors (the broken tasks), and said so in its last line
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert "error: 7 trial(s) ended infra_error" in res.stderr, res.stderr
    json.loads(res.stdout)
    lines = res.stderr.splitlines()
    warning = "warning: task newer: task.toml declares schema 9.0, newer than 1.1; keys ignored: [agent] turn_limit"
    assert warning in lines
    for name, (_, _, reason) in BROKEN.items():
        assert any(line.startswith(f"task {name}: {reason}") and line.endswith("(recorded as infra_error)")
                   for line in lines), (name, lines)  # fmt: skip
    with sqlite3.connect(db) as conn:
        rows = {t: (o, e, m) for t, o, e, m in conn.execute(
            "SELECT task_id, outcome, exception, exception_message FROM trials")}  # fmt: skip
    conn.close()
    assert rows.pop("newer")[0] == "resolved"
    assert set(rows) == set(BROKEN)
    for name, (outcome, exception, message) in rows.items():
        assert (outcome, exception) == ("infra_error", "InvalidTaskError"), (name, rows[name])
        assert message.startswith(BROKEN[name][2]), (name, message)

"""The tests/ folder's snapshot (verify/staged.py): the same archive as one read from disk, never a stale one."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import time
from pathlib import Path

import pytest

from paths import EXAMPLES
from trialbook import tokens
from trialbook.verify import staged, task_facts

OLD = time.time() - 3600  # older than staged.RACY_NS: a snapshot of it is kept


def _folder(tmp_path: Path) -> Path:
    tests = tmp_path / "tests"
    (tests / "data").mkdir(parents=True)
    (tests / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (tests / "test_x.py").write_text("def test_x():\n    assert True\n")
    (tests / "data" / "in.txt").write_text("input\n")
    (tests / "config.json").write_text("{}\n")
    _age(tests)
    return tests


def _age(tests: Path) -> None:
    for p in [tests, *tests.rglob("*")]:
        os.utime(p, (OLD, OLD))


def _members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: (tar.extractfile(m).read() if m.isfile() else b"dir") for m in tar}  # type: ignore[union-attr]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    staged.clear()
    task_facts.forget()
    monkeypatch.setattr(staged, "RACY_NS", 0)  # a ctime cannot be set back: the folder is taken as old enough


def test_the_snapshot_archives_what_tarfile_archives_from_disk(tmp_path: Path) -> None:
    tests = _folder(tmp_path)
    snap = staged.snapshot(tests)
    assert snap is not None and snap.script.startswith("#!/bin/bash")
    info = tarfile.TarInfo("stage/tests/test.sh")
    info.size = 3
    got = _members(snap.tar("stage/tests", frozenset({"test.sh", "config.json"}), [(info, b"new")]))
    assert got == {
        "stage/tests": b"dir", "stage/tests/data": b"dir", "stage/tests/data/in.txt": b"input\n",
        "stage/tests/test_x.py": b"def test_x():\n    assert True\n", "stage/tests/test.sh": b"new",
    }  # fmt: skip
    zipped = _members(snap.tar_gz(frozenset(), []))
    assert zipped["tests/config.json"] == b"{}\n" and zipped["tests/data/in.txt"] == b"input\n"


def test_a_changed_task_is_read_again_never_served_stale(tmp_path: Path) -> None:
    tests = _folder(tmp_path)
    first = staged.snapshot(tests)
    assert first is not None and staged.snapshot(tests) is first  # kept: the folder did not change
    before = staged.reads
    # the same size, the same mtime: only the content (and so ctime and, rewritten, maybe the inode) differs
    (tests / "data" / "in.txt").write_text("INPUT\n")
    os.utime(tests / "data" / "in.txt", (OLD, OLD))
    again = staged.snapshot(tests)
    assert again is not None and again is not first and staged.reads == before + 1
    assert _members(again.tar("tests", frozenset(), []))["tests/data/in.txt"] == b"INPUT\n"
    assert again.hash != first.hash
    (tests / "new_test.py").write_text("x = 1\n")  # a file added
    assert "tests/new_test.py" in _members(staged.snapshot(tests).tar("tests", frozenset(), []))  # type: ignore[union-attr]
    (tests / "new_test.py").unlink()  # and removed
    assert "tests/new_test.py" not in _members(staged.snapshot(tests).tar("tests", frozenset(), []))  # type: ignore[union-attr]


def test_a_folder_modified_just_now_is_not_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staged, "RACY_NS", 2_000_000_000)
    tests = _folder(tmp_path)
    (tests / "test.sh").write_text("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n")  # mtime: now
    a = staged.snapshot(tests)
    b = staged.snapshot(tests)
    assert a is not None and b is not None and a is not b  # each read again: a change within the mtime tick is seen


def test_the_verifier_stages_the_changed_test_sh(tmp_path: Path) -> None:
    from trialbook.tasks import load_task

    shutil.copytree(EXAMPLES / "plain-bugfix", tmp_path / "task")
    task = load_task(tmp_path / "task")
    tests = task.tests_dir
    _age(tests)
    snap = staged.snapshot(tests)
    assert snap is not None and "pytest" in snap.script
    assert task_facts.of(task, snap).script.text == snap.script
    (tests / "test.sh").write_text("#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n")
    _age(tests)
    now = staged.snapshot(tests)
    assert now is not None and "echo 0" in now.script
    # the verifier's facts of the tests are those of the folder as read now (task_facts.of), not as loaded
    assert task_facts.of(task, now).script.text == now.script and not task_facts.of(task, now).test_modules


def test_tokens_are_hex_of_the_asked_length_and_never_repeat() -> None:
    seen = {tokens.token_hex(8) for _ in range(2000)}
    assert len(seen) == 2000 and all(len(t) == 16 and int(t, 16) >= 0 for t in seen)
    assert len(tokens.token_hex(5000)) == 10000

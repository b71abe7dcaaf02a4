"""Small archives written by the shell's builtins (sandbox/box.py write_inline): run with the system's POSIX sh
into a temp folder, the files, folders and modes are the archive's; anything the builtins cannot write exactly
is refused (the caller then extracts with tar)."""

from __future__ import annotations

import io
import stat
import subprocess
import tarfile

import pytest

from trialbook.sandbox.box import INLINE_WRITES, write_inline


def archive(*members: tuple[str, bytes | None, int] | tuple[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for member in members:
            info = tarfile.TarInfo(member[0])
            if len(member) == 2:  # (name, link target)
                info.type, info.linkname = tarfile.SYMTYPE, str(member[1])
                tar.addfile(info)
                continue
            data, info.mode = member[1], member[2]
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_files_folders_and_modes_are_written_as_the_archive_has_them(tmp_path):
    texts = {
        "a/b/plain.txt": "line one\nline two\n",
        "a/no_newline": "no newline at the end",
        'a/quotes\'s "and" $HOME `x` \\n %s': "it's $(echo not run) `nor this` \\ % \t\r\n\n\n",
        "a/unicode-é.txt": "héllo ✓\n",
        "a/empty": "",
    }
    data = archive(
        ("a", None, 0o755), ("a/b", None, 0o700),
        *((name, text.encode(), 0o644) for name, text in texts.items()),
        ("a/run.sh", b"#!/bin/sh\necho hi\n", 0o755), ("a/secret", b"s\n", 0o600),
        ("deep/er/file", b"x", 0o644),  # folders the archive does not list
    )  # fmt: skip
    text = write_inline(data, str(tmp_path))
    assert text is not None
    subprocess.run(["sh", "-c", text], check=True)
    for name, want in texts.items():
        assert (tmp_path / name).read_bytes() == want.encode(), name
    mode = {p: stat.S_IMODE((tmp_path / p).stat().st_mode) for p in ("a", "a/b", "a/run.sh", "a/secret", "a/empty")}
    assert mode == {"a": 0o755, "a/b": 0o700, "a/run.sh": 0o755, "a/secret": 0o600, "a/empty": 0o644}
    assert (tmp_path / "deep/er/file").read_text() == "x"
    assert not (tmp_path / "not run").exists()
    # at most the folders' mkdir and a chmod per mode other than the defaults
    assert text.count("mkdir") == 1 and text.count("chmod") == 3


@pytest.mark.parametrize(
    "members",
    [
        [("a/link", "../../etc/passwd")],  # a symlink
        [("a/nul", b"a\0b", 0o644)],  # a NUL byte
        [("a/latin1", "caf\xe9".encode("latin-1"), 0o644)],  # not UTF-8
        [("../out", b"x", 0o644)],  # a path leaving the destination
        [("/abs", b"x", 0o644)],
        [("big", b"x" * (INLINE_WRITES + 1), 0o644)],
    ],
)
def test_what_builtins_cannot_write_exactly_is_refused(members):
    assert write_inline(archive(*members), "/dest") is None


def test_nothing_outside_the_destination_is_written(tmp_path):
    dest = tmp_path / "dest"
    text = write_inline(archive(("x/y.txt", b"y", 0o644)), str(dest))
    assert text is not None
    subprocess.run(["sh", "-c", text], check=True)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == ["dest", "dest/x", "dest/x/y.txt"]

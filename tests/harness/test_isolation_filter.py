"""The agent's tree as the verifier receives it (verify/isolation._filter): whatever archive the agent's own
`tar` forged, the re-packed one extracts without an error, by GNU tar and by the shell's builtins (a change that
could not be applied would leave the trial ungraded: tests/harness/cheats/tar_conflicts.sh runs it for real)."""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

from trialbook.sandbox.box import write_inline
from trialbook.verify.isolation import IsolationError, _filter
from trialbook.verify.tree import HEADER_LIMIT, PATH_MAX, _refused_by_git


def forged() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:

        def add(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"x\n") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode = kind, link, 0o755 if kind == tarfile.DIRTYPE else 0o644
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        add("testbed", tarfile.DIRTYPE)
        add("testbed/real.py", data=b"fixed\n")
        add("testbed/real.py", data=b"second copy\n")  # a name twice: the first stands
        add("testbed/clash", tarfile.DIRTYPE)
        add("testbed/clash")  # a file where a folder is
        add("testbed/plain")
        add("testbed/plain/below")  # a file below a file
        add("testbed/deep/er/file")  # folders implied by a file...
        add("testbed/deep")  # ...then a file of the folder's name
        add("testbed/link", tarfile.SYMTYPE, "/etc")
        add("testbed/link/passwd")  # below a link
        add("testbed/hard", tarfile.LNKTYPE, "testbed/nothing")  # a hard link to nothing
        add("testbed/hard2", tarfile.LNKTYPE, "testbed/real.py")  # a hard link to a kept file
        add("testbed/.git/config")
        add("testbed/sub/.git/HEAD", data=b"ref: refs/heads/main\n")  # a nested repository: its files, not its .git
        add("testbed/sub/f")
    return buf.getvalue()


def repacked() -> bytes:
    with tempfile.TemporaryFile() as raw, tempfile.TemporaryFile() as tree:
        raw.write(forged())
        _filter(raw, tree, "stage")
        tree.seek(0)
        return tree.read()


def contents(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): ("-> " + str(p.readlink())) if p.is_symlink() else p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_symlink() or p.is_file()
    }


WANT = {
    "real.py": "fixed\n", "plain": "x\n", "deep/er/file": "x\n", "link": "-> /etc", "hard2": "fixed\n", "sub/f": "x\n",
}  # fmt: skip


def test_a_forged_archive_repacks_to_one_that_tar_extracts_without_an_error(tmp_path):
    data = repacked()
    res = subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=data, capture_output=True)
    assert (res.returncode, res.stderr) == (0, b"")
    tree = tmp_path / "stage" / "tree"
    assert (tree / "clash").is_dir() and contents(tree) == WANT


def test_each_name_is_written_once_and_nothing_below_a_leaf():
    with tarfile.open(fileobj=io.BytesIO(repacked())) as tar:
        names = [m.name.removeprefix("stage/tree/") for m in tar]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(["stage", "stage/tree", *WANT, "clash"])


def test_the_shells_builtins_write_what_tar_writes_or_leave_it_to_tar(tmp_path):
    data = repacked()
    text = write_inline(data, str(tmp_path / "sh"))
    assert text is None  # it holds links: left to tar
    plain = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data)) as src, tarfile.open(fileobj=plain, mode="w") as dst:
        for m in src:
            if m.isfile() or m.isdir():
                dst.addfile(m, src.extractfile(m) if m.isfile() else None)
    text = write_inline(plain.getvalue(), str(tmp_path / "sh"))
    assert text is not None
    subprocess.run(["sh", "-c", text], check=True)
    assert contents(tmp_path / "sh" / "stage" / "tree") == {k: v for k, v in WANT.items() if k not in ("link", "hard2")}


def test_unblock_clears_untracked_content_in_the_way_and_nothing_through_a_link(tmp_path):
    """isolation.UNBLOCK, as the apply script runs it in the working tree when git apply failed: a folder where the
    change adds a file, a file where it adds a folder, a link where it adds a folder (the link goes, not what it
    points to), and nothing else."""
    from trialbook.verify.isolation import UNBLOCK

    outside, tree = tmp_path / "outside", tmp_path / "tree"
    outside.mkdir()
    (outside / "passwd").write_text("root\n")
    (tree / "build").mkdir(parents=True)
    (tree / "build" / "lib.txt").write_text("artifact\n")
    (tree / "logs").write_text("a file\n")
    (tree / "cache").symlink_to(outside)
    (tree / "kept").mkdir()
    (tree / "kept" / "a.txt").write_text("untouched\n")
    added = b"\0".join([b"build", b"logs/run.txt", b"cache/passwd", b"kept/new.txt", b"new dir/with space.txt"])
    subprocess.run(["xargs", "-0", "-r", "sh", "-c", UNBLOCK, "unblock"], input=added, cwd=tree, check=True)
    assert sorted(p.name for p in tree.iterdir()) == ["kept"]
    assert (outside / "passwd").read_text() == "root\n" and (tree / "kept" / "a.txt").exists()


def test_a_path_longer_than_path_max_is_not_carried(tmp_path):
    room = PATH_MAX - len("/stage/tree/") - 1  # the longest name below the tree the verifier's container can write
    fits, past = "/".join(["d" * 200] * 21)[:room], "/".join(["e" * 200] * 21)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in (f"testbed/{fits}", f"testbed/{past}", "testbed/ok.py"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"x\n"))
    with tempfile.TemporaryFile() as raw, tempfile.TemporaryFile() as tree:
        raw.write(buf.getvalue())
        assert _filter(raw, tree, "stage") == 1
        tree.seek(0)
        with tarfile.open(fileobj=tree) as tar:
            names = [m.name.removeprefix("stage/tree/") for m in tar if m.isfile()]
    assert names == [fits, "ok.py"] and len(f"/stage/tree/{fits}".encode()) == PATH_MAX - 1


def test_no_header_of_the_agents_archive_is_copied(tmp_path):
    """A pax `path` header takes priority over the name: the re-packed member must be where its name says."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("testbed/notes.txt")
        info.pax_headers = {"path": "testbed/conftest.py", "SCHILY.xattr.user.x": "y"}
        info.size, info.uid, info.uname = 2, 1234, "agent"
        tar.addfile(info, io.BytesIO(b"x\n"))
    with tempfile.TemporaryFile() as raw, tempfile.TemporaryFile() as tree:
        raw.write(buf.getvalue())
        _filter(raw, tree, "stage")
        tree.seek(0)
        data = tree.read()
    res = subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=data, capture_output=True)
    assert res.returncode == 0, res.stderr
    assert contents(tmp_path) == {"stage/tree/conftest.py": "x\n"}  # where the agent's own tar had put it
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert [(m.name, m.pax_headers, m.uid, m.uname) for m in tar if m.isfile()] == [
            ("stage/tree/conftest.py", {}, 0, "")
        ]


def test_paths_git_refuses_are_not_carried():
    assert all(_refused_by_git(p, False) for p in (".git", ".GIT/config", "a/.Git/HEAD", "sub/.git"))
    assert _refused_by_git(".gitmodules", True) and _refused_by_git("a/.GitModules", True)
    assert not any(_refused_by_git(p, False) for p in (".gitmodules", ".git.", "GIT~1", "a/.gitx", "git", ".github/x"))


def _filtered(data: bytes) -> int:
    with tempfile.TemporaryFile() as raw, tempfile.TemporaryFile() as tree:
        raw.write(data)
        return _filter(raw, tree, "stage")


def test_a_forged_archive_cannot_take_the_harnesss_memory_or_stack():
    """A pax header is read whole into memory: past HEADER_LIMIT the archive is refused (the caller then asks the
    daemon for the tree); so is a chain of pax headers deep enough for a RecursionError in tarfile."""
    big = tarfile.TarInfo("././@PaxHeader")
    big.type, big.size = tarfile.XHDTYPE, HEADER_LIMIT + 512
    record = b"30 comment=" + b"a" * 18 + b"\n"
    body = record * (big.size // len(record)) + b"\n" * (big.size % len(record))
    with pytest.raises(IsolationError, match="an extended header of 1,049,088 bytes"):
        _filtered(big.tobuf(format=tarfile.USTAR_FORMAT) + body + b"\0" * 2048)
    link = tarfile.TarInfo("././@PaxHeader")
    link.type, link.size = tarfile.XHDTYPE, len(record)
    block = link.tobuf(format=tarfile.USTAR_FORMAT) + record + b"\0" * (512 - len(record))
    with pytest.raises(IsolationError, match="could not be read"):
        _filtered(block * 5000 + b"\0" * 1024)


def test_a_sparse_member_is_refused():
    """tarfile reads a sparse member's map without a bound; the harness's own `tar -cf` writes none."""
    old = tarfile.TarInfo("testbed/a")  # the old GNU form: the map in the header and its extended blocks
    old.type = tarfile.GNUTYPE_SPARSE
    new = tarfile.TarInfo("testbed/b")  # the pax form (GNU sparse 1.0): the map in the member's data
    new.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "10"}
    for data in (old.tobuf(format=tarfile.GNU_FORMAT), new.tobuf(format=tarfile.PAX_FORMAT)):
        with pytest.raises(IsolationError, match="a sparse member"):
            _filtered(data + b"\0" * 2048)

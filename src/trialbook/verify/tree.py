"""The agent's working tree as the harness carries it: the archive its container wrote, re-packed member by member
(repack) into one that extracts without an error in the verifier's container and holds nothing the agent's archive
could smuggle past the diff (verify/isolation.py computes and applies that diff)."""

from __future__ import annotations

import tarfile
from pathlib import PurePosixPath
from typing import IO, Any

# the longest path a system call takes (Linux PATH_MAX, with its NUL): a longer one in the agent's tree, made folder by
# folder, cannot be written in the verifier's container (the daemon's copy failed, an ungraded infra error) and is
# not carried (tests/harness/cheats/path_past_path_max.sh)
PATH_MAX = 4096


class UnreadableArchive(Exception):
    """The agent's archive could not be read (verify/isolation.capture then asks the daemon for the tree)."""


def repack(raw: IO[bytes], tree: IO[bytes], stage: str) -> int:
    """Re-pack the agent's tree (a tar whose top folder is the working tree) below `<stage>/tree` as an archive
    that extracts without an error: only files, folders and links, nothing outside the tree, nothing git refuses
    (_refused_by_git: no `.git`), each name once (the first), nothing below a file or a link of the archive (an
    extraction could follow a link out of the tree, and cannot write below a file), no file where a folder was, hard
    links only to files it keeps (a folder's entry after what it holds is dropped too: only its mode is lost), no path
    too long to write (PATH_MAX; how many were dropped is returned), each member's header written afresh (_fresh).
    The archive is the agent's to shape (the container's own tar wrote it, or its files did), and one that could not
    be applied would leave the trial ungraded, its failure uncounted (tests/harness/cheats/tar_conflicts.sh)."""
    too_long = 0
    room = PATH_MAX - len(f"/{stage}/tree/".encode()) - 1
    try:
        raw.seek(0)
        kept: set[str] = set()  # names written, and the folders they imply
        leaves: set[str] = set()  # names written that are not folders
        files: set[str] = set()  # of them, what a hard link may name
        with (
            tarfile.open(fileobj=raw, mode="r|", tarinfo=_BoundedInfo) as src,
            tarfile.open(fileobj=tree, mode="w|") as dst,
        ):
            top = tarfile.TarInfo(stage)  # the stage folder itself: no exec needed to make it
            top.type, top.mode = tarfile.DIRTYPE, 0o755
            dst.addfile(top)
            while (member := src.next()) is not None:
                # both keep every member they saw (TarFile.members: not in typeshed): a flood of files must not pile up
                src.members.clear()  # type: ignore[attr-defined]
                dst.members.clear()  # type: ignore[attr-defined]
                rest = _below_top(member.name)
                if rest is None or (rest == "" and not member.isdir()) or _refused_by_git(rest, member.issym()):
                    continue
                if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
                    continue
                if len(rest.encode("utf-8", "surrogateescape")) > room:
                    too_long += 1
                    continue
                parents = ["/".join(rest.split("/")[:i]) for i in range(1, rest.count("/") + 1)]
                if rest in kept or any(p in leaves for p in parents):
                    continue
                target = _below_top(member.linkname) if member.islnk() else None
                if member.islnk() and target not in files:
                    continue
                kept.update(parents, (rest,))
                if not member.isdir():
                    leaves.add(rest)
                if member.isfile() or member.islnk():
                    files.add(rest)
                fresh = _fresh(member, f"{stage}/tree/{rest}".rstrip("/"), f"{stage}/tree/{target}")
                dst.addfile(fresh, src.extractfile(member) if member.isfile() else None)
    except Exception as exc:  # noqa: BLE001 - whatever a forged archive makes tarfile raise (a RecursionError, say)
        raise UnreadableArchive(f"{type(exc).__name__}: {exc}") from None
    return too_long


HEADER_LIMIT = 1 << 20  # bytes of one pax or GNU long-name header of the agent's archive


class _BoundedInfo(tarfile.TarInfo):
    """A member header that refuses an extended header past HEADER_LIMIT: tarfile reads one whole into memory (a forged
    archive's 300 MB pax header took 650 MB of the harness's; its own headers hold a name of at most PATH_MAX); and a
    sparse member, whose map tarfile reads without a bound (a chain of extended blocks, 21 entries each: 4 GiB of them
    would be ~15 GB of tuples). `tar -cf` without -S, as the harness runs it, and the daemon's copy write none."""

    def _refuse_sparse(self, *_: Any) -> None:
        raise tarfile.HeaderError("a sparse member")

    _proc_sparse = _proc_gnusparse_00 = _proc_gnusparse_01 = _proc_gnusparse_10 = _refuse_sparse

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        extended = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE,
                    tarfile.SOLARIS_XHDTYPE)  # fmt: skip
        if self.type in extended and self.size > HEADER_LIMIT:
            raise tarfile.HeaderError(f"an extended header of {self.size:,} bytes")
        return super()._proc_member(tarfile_)  # type: ignore[misc,no-any-return]  # TarInfo's header hook: not in typeshed


def _refused_by_git(path: str, link: bool) -> bool:
    """A path git refuses to index on Linux, whatever its settings (read-cache.c verify_path, with the harness's
    core.protectNTFS and core.protectHFS off): a `.git` folder in any case (the top one, a nested repository's, on
    which git would fail or see a gitlink: its other files are carried), a link named `.gitmodules` in any case. A
    change holding one had made the harness's `git add` fail, an ungraded infra error; it is not carried."""
    parts = path.lower().split("/")
    return ".git" in parts or (link and parts[-1] == ".gitmodules")


def _fresh(member: tarfile.TarInfo, name: str, link_target: str) -> tarfile.TarInfo:
    """A new header for a kept member: its type, mode, size and time, nothing else of the agent's archive (a pax
    `path` header takes priority over the name when written, so a member re-packed with only its name changed was
    extracted where the agent named it, straight into the verifier's tree: tests/harness/cheats/pax_path_header.sh)."""
    out = tarfile.TarInfo(name)
    out.mode, out.mtime = member.mode & 0o7777, member.mtime
    if member.isfile():
        out.type, out.size = tarfile.REGTYPE, member.size
    elif member.isdir():
        out.type = tarfile.DIRTYPE
    elif member.issym():
        out.type, out.linkname = tarfile.SYMTYPE, member.linkname
    else:
        out.type, out.linkname = tarfile.LNKTYPE, link_target
    return out


def _below_top(name: str) -> str | None:
    """The archive name below its top folder (`testbed/a/b` -> `a/b`); None for a path leaving it."""
    parts = PurePosixPath(name).parts
    if not parts or ".." in parts:
        return None
    return "/".join(parts[1:])

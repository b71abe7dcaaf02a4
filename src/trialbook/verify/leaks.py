"""Leak scans: is the task's answer already in the agent's image?

The reference solution's distinctive added lines (`gold_lines`: the lines its patch adds, or the files its script
writes, less the short and the common ones, less those the repository already has at HEAD) are looked for, in one
read-only container of the task's image with no network, in one pass (`grep -F` with a pattern file):

- every object of the working tree's git store, reachable or not (`git cat-file --batch-all-objects`: packs, loose
  objects, whatever a branch, tag, remote, stash or reflog holds, or nothing does), each hit blob then named by
  what reaches it (the refs whose history has it, the reflog, or nothing);
- every text file of the filesystem (the working tree's ignored and untracked files, site-packages, caches, docs);
- every zip or tar archive on it (wheels, sdists, eggs, pip's cache), member by member (the image's Python).

A place holding at least `threshold(n)` of the n distinctive lines is a hit; a task with a hit is `leaky`.
A line the solution adds that the repository has at HEAD is no evidence (it is what the base already says).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from trialbook.result_types import Result, optional

MIN_CHARS = 12  # a shorter added line is too common to tell anything
MAX_CHARS = 200  # a longer one is searched by its first MAX_CHARS characters
MAX_LINES = 200  # at most this many lines searched (the longest), well under the 128 KiB of one env string
MIN_HITS = 3  # a place must hold min(n, max(MIN_HITS, ceil(SHARE * n))) of the n distinctive lines
SHARE = 0.3
SCAN_DIR = "/.tbleak"  # the scan's own tmpfs: no path of the image is hidden by it
# not read: the kernel's and the scan's own mounts, and what only the distribution's packages put there (shared
# libraries, locales, time zones, perl, manuals, its package database): a repository's code or its fix has no place in
# them, and they are half of a small image's files
SKIP = ("/proc", "/sys", "/dev", SCAN_DIR, "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/locale",
        "/usr/share/locale", "/usr/share/zoneinfo", "/usr/share/i18n", "/usr/share/perl", "/usr/share/perl5",
        "/usr/share/man", "/usr/share/info", "/usr/lib/gcc", "/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt",
        "/var/cache/debconf")  # fmt: skip
ARCHIVES = ("*.whl", "*.zip", "*.egg", "*.tar.gz", "*.tgz", "*.tar.bz2", "*.tar.xz", "*.tar")
# an import of a top-level module (`import os`, `from typing import Any`) is in every other file of site-packages
COMMON = re.compile(r"^(?:import [\w.]+(?: as \w+)?|from \w+ import [\w, ()]+|[\W_]*|#.*)$")
_DIFF_START = re.compile(r"^(?:diff --git |--- |\+\+\+ )")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
MARK = "@@TBLEAK@@"


def threshold(n: int) -> int:
    return min(n, max(MIN_HITS, math.ceil(SHARE * n)))


def patch_additions(text: str) -> list[str]:
    """The lines a unified diff in `text` adds (empty when `text` holds no diff)."""
    out, in_diff = [], False
    for line in text.splitlines():
        if _DIFF_START.match(line):
            in_diff = True
        elif in_diff and line.startswith("+"):
            out.append(line[1:])
    return out


def heredoc_lines(text: str) -> list[str]:
    """The bodies of a shell script's here-documents (`cat > f <<'EOF' ... EOF`): the files it writes."""
    out: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _HEREDOC.search(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and lines[i].strip() != m.group(2):
            out.append(lines[i])
            i += 1
        i += 1
    return out


def distinctive(lines: Iterable[str]) -> list[str]:
    """`lines` stripped, less the short, the common and the repeated, cut at MAX_CHARS; the longest MAX_LINES."""
    seen: dict[str, None] = {}
    for raw in lines:
        line = raw.strip()[:MAX_CHARS]
        if len(line) >= MIN_CHARS and not COMMON.match(line) and "\0" not in line:
            seen.setdefault(line, None)
    kept = sorted(seen, key=len, reverse=True)[:MAX_LINES]
    return [line for line in seen if line in kept]


def gold_lines(solution_dir: Path) -> list[str]:
    """The candidate lines of a task's reference solution: what its patches add, else what its scripts write."""
    texts = [p.read_text(errors="replace") for p in sorted(solution_dir.rglob("*")) if p.is_file()]
    lines = [line for text in texts for line in patch_additions(text)]
    if not lines:
        lines = [line for text in texts for line in heredoc_lines(text)]
    return distinctive(lines)


@dataclass(frozen=True)
class LeakHit(Result):
    where: str  # "git blob <sha> (<what reaches it>)", a file's path, or "<archive>!<member>"
    kind: str  # git, file, archive
    lines: int  # how many of the distinctive lines it holds


@dataclass(frozen=True, kw_only=True)
class TaskLeaks(Result):
    """One task's scan: verdict `leaky` (some place holds the answer), `clean`, or `not_scanned` (with why)."""

    task_id: str
    verdict: str
    image: str | None = None
    lines: int = 0  # distinctive lines searched (after those at base were dropped)
    threshold: int = 0
    hits: list[LeakHit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    reason: str | None = optional()

    @property
    def summary(self) -> str:
        if self.verdict == "not_scanned":
            return f"not scanned: {self.reason}"
        if not self.hits:
            return f"clean: {self.lines} distinctive line(s) of the solution found nowhere in the image"
        shown = "; ".join(f"{h.where} ({h.lines}/{self.lines} lines)" for h in self.hits[:3])
        more = f"; and {len(self.hits) - 3} more" if len(self.hits) > 3 else ""
        return f"the solution is in the image: {shown}{more}"


@dataclass(frozen=True)
class LeakScan(Result):
    tasks: list[TaskLeaks]
    verdicts: dict[str, int]


# ---- the container side: one POSIX shell script, and the image's own Python for archives --------------------------

ARCHIVE_READER = r"""
import sys, tarfile, zipfile
out = sys.stdout.buffer if hasattr(sys.stdout, 'buffer') else sys.stdout
pats = [p.encode('utf-8') for p in open(sys.argv[1], 'rb').read().decode('utf-8').split('\n') if p]
for path in open(sys.argv[2], 'rb').read().decode('utf-8', 'replace').split('\n'):
    if not path:
        continue
    try:
        if zipfile.is_zipfile(path):
            z = zipfile.ZipFile(path)
            items = [(i.filename, z.open(i)) for i in z.infolist() if i.file_size < 8 << 20]
        elif tarfile.is_tarfile(path):
            t = tarfile.open(path)
            items = [(m.name, t.extractfile(m)) for m in t.getmembers() if m.isfile() and m.size < 8 << 20]
        else:
            continue
        for name, fh in items:
            data = fh.read()
            if not any(p in data for p in pats):
                continue
            for line in data.split(b'\n'):
                if any(p in line for p in pats):
                    out.write(path.encode('utf-8') + b'!' + name.encode('utf-8') + b'\0' + line + b'\n')
    except Exception as exc:
        out.write(('@@TBLEAK@@ note archive %s not read: %s\n' % (path, type(exc).__name__)).encode('utf-8'))
"""

_SCAN = r"""
S=__SCAN_DIR__
M=__MARK__
printf '%s\n' "$TB_LEAK_PATTERNS" > $S/pat
G="git -c safe.directory=*"
if cd "$TB_LEAK_WORKDIR" 2>/dev/null && $G rev-parse --git-dir >/dev/null 2>&1; then
  echo "$M base"
  $G grep -h -I -F -f $S/pat HEAD -- 2>/dev/null
  echo "$M git"
  $G cat-file --batch-all-objects --batch-check='%(objecttype) %(objectname)' \
    | awk '$1 == "blob" { print $2 }' \
    | $G cat-file --batch="$M obj %(objectname)" | grep -a -F -e "$M obj " -f $S/pat
else
  echo "$M note no git repository at $TB_LEAK_WORKDIR"
fi
echo "$M files"
find / -xdev \( __PRUNE__ \) -prune -o -type f \( __NAMES__ -o -path '*/pip/http*' \) -fprint $S/archives \
  -o -type f -print0 2>/dev/null | xargs -0 -r grep -H -I -F -Z -f $S/pat 2>/dev/null
echo "$M archives"
PY=$(command -v python3 || command -v python || true)
if [ -n "$PY" ]; then "$PY" -c "$TB_LEAK_ARCHIVES" $S/pat $S/archives
else echo "$M note no python in the image: archives not read"; fi
echo "$M end"
"""

WHERE_SCRIPT = r"""
cd "$TB_LEAK_WORKDIR" || exit 0
G="git -c safe.directory=*"
for b in $TB_LEAK_BLOBS; do
  c=$($G log -m --all --reflog --format=%H --find-object=$b 2>/dev/null | tail -n 1)
  echo "$b commit $c"
  [ -n "$c" ] || continue
  $G for-each-ref --contains "$c" --format='%(refname)' 2>/dev/null | sed "s/^/$b ref /"
  $G merge-base --is-ancestor "$c" HEAD 2>/dev/null && echo "$b ancestor"
done
"""


def scan_script() -> str:
    return (
        _SCAN.replace("__SCAN_DIR__", SCAN_DIR)
        .replace("__MARK__", MARK)
        .replace("__PRUNE__", " -o ".join(f"-path {p}" for p in SKIP))
        .replace("__NAMES__", " -o ".join(f"-name '{n}'" for n in ARCHIVES))
    )


@dataclass
class Found:
    """What the container printed, parsed: base lines, and the matching lines of each place."""

    base: list[str] = field(default_factory=list)
    places: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, where) -> lines
    notes: list[str] = field(default_factory=list)


def parse(output: bytes) -> Found:
    found, section, blob = Found(), "", ""
    for raw in output.split(b"\n"):
        line = raw.decode("utf-8", "replace")
        if line.startswith(MARK + " "):
            word, _, rest = line[len(MARK) + 1 :].partition(" ")
            if word == "obj":
                blob = rest.strip()
            elif word == "note":
                found.notes.append(rest)
            else:
                section = word
            continue
        if not line:
            continue
        if section == "base":
            found.base.append(line)
        elif section == "git" and blob:
            found.places.setdefault(("git", blob), []).append(line)
        elif section in ("files", "archives") and "\0" in line:
            where, _, text = line.partition("\0")
            kind = "file" if section == "files" else "archive"
            found.places.setdefault((kind, where), []).append(text)
    return found


def judge(patterns: list[str], found: Found) -> tuple[list[str], list[tuple[str, str, int]]]:
    """(the distinctive lines: those not at base, the places holding at least `threshold` of them)."""
    lines = [p for p in patterns if not any(p in b for b in found.base)]
    need = threshold(len(lines))
    hits = []
    for (kind, where), texts in found.places.items():
        held = sum(any(p in t for t in texts) for p in lines)
        if lines and held >= need:
            hits.append((kind, where, held))
    hits.sort(key=lambda h: (-h[2], h[0], h[1]))
    return lines, hits


def describe_blobs(where: bytes) -> dict[str, str]:
    """blob sha -> what reaches it, from the WHERE_SCRIPT script's output."""
    commits: dict[str, str] = {}
    refs: dict[str, list[str]] = {}
    ancestors: set[str] = set()
    for raw in where.decode("utf-8", "replace").splitlines():
        parts = raw.split(" ", 2)
        if len(parts) >= 2 and parts[1] == "commit":
            commits[parts[0]] = parts[2] if len(parts) > 2 else ""
        elif len(parts) == 3 and parts[1] == "ref":
            refs.setdefault(parts[0], []).append(parts[2])
        elif len(parts) == 2 and parts[1] == "ancestor":
            ancestors.add(parts[0])
    out = {}
    for blob, commit in commits.items():
        if not commit:
            out[blob] = "unreachable: no ref or reflog reaches it"
        elif refs.get(blob):
            history = "; an ancestor of HEAD" if blob in ancestors else ""
            out[blob] = f"in commit {commit[:12]}, reached by {', '.join(refs[blob])}{history}"
        else:
            out[blob] = f"in commit {commit[:12]}, reached by the reflog only"
    return out


def hit_list(hits: list[tuple[str, str, int]], blobs: dict[str, str]) -> list[LeakHit]:
    out = []
    for kind, where, held in hits:
        name = f"git blob {where[:12]} ({blobs.get(where, 'unknown')})" if kind == "git" else where
        out.append(LeakHit(where=name, kind=kind, lines=held))
    return out


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 2)

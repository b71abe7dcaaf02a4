"""`tasks overlap POOL EVAL`: what a training pool shares with an evaluation set.

Each side is a folder of task folders (the reference patch read from `solution/solve.sh`, the tests from
`tests/config.json`, the statement from `instruction.md`, the repository from task.toml's `[metadata] repo`, the
config's `repo` or the id) or a JSONL file of SWE-bench rows (`instance_id`, `repo`, `patch`, `FAIL_TO_PASS`,
`PASS_TO_PASS`, `problem_statement`), or, for a pool, a TSV of SWE-smith's profiles (`OWNER/NAME<TAB>COMMIT`:
repositories only). A pool task and an evaluation task overlap by:
- `same_patch`: the same change (the reference patches' changed lines are equal);
- `same_function`: both patches change the same function (repository, file and name: the innermost `def` above a
  changed line, in the hunk or its header);
- `same_file`: both change the same file of the same repository;
- `same_test`: a FAIL_TO_PASS test of both, in the same repository (the tests a task is about: the PASS_TO_PASS
  lists of one repository's tasks share most of its suite);
- `similar_statement`: problem statements whose word 5-shingle Jaccard similarity is at least the threshold.
Repositories are shared or not, reported apart: a shared repository alone puts no task in the overlap. The eval
tasks with any overlap are the `in_overlap` list that `compare --split` reads; the functions and files the
evaluation's patches touch are the exclusion list `tasks synthesize --exclude` honours.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.files import json_lines
from trialbook.records import repo_from_task_id
from trialbook.result_types import Result

KINDS = ("same_patch", "same_function", "same_file", "same_test", "similar_statement")
SHINGLE = 5
DEFAULT_THRESHOLD = 0.5
DIFF_START = re.compile(r"^diff --git ", re.MULTILINE)
HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@ ?(.*)$")
DEF = re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+(\w+)")
WORD = re.compile(r"\w+")


@dataclass
class Item:
    id: str
    repo: str
    patch: str
    tests: set[str]  # FAIL_TO_PASS
    statement: str
    files: set[str] = field(default_factory=set)
    functions: set[str] = field(default_factory=set)  # path::name
    changed: tuple[str, ...] = ()  # the patch's changed lines, in order
    shingles: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Pair(Result):
    pool: str
    eval: str
    kinds: list[str]
    detail: list[str]  # the shared files/functions/tests, the similarity


@dataclass(frozen=True)
class Overlap(Result):
    pool: str
    eval: str
    pool_tasks: int
    eval_tasks: int
    threshold: float
    max_similarity: float  # the highest statement similarity of any pool/eval pair (flagged or not)
    repos_shared: list[str]
    counts: dict[str, int]  # pairs per kind
    pairs: list[Pair]
    pool_in_overlap: list[str]
    in_overlap: list[str]  # eval ids (compare --split's "in")
    out_of_overlap: list[str]


def patch_of_solve(text: str) -> str:
    """The diff a solve.sh applies (from its first `diff --git` to the heredoc's end marker)."""
    m = DIFF_START.search(text)
    if m is None:
        return ""
    lines = []
    for line in text[m.start() :].splitlines():
        if re.fullmatch(r"[A-Z_0-9]+", line.strip()) and line.strip().startswith("EOF"):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def touched(patch: str) -> tuple[set[str], set[str], tuple[str, ...]]:
    """(files, path::function names, changed lines) of a unified diff. A changed line's function is the innermost
    `def`/`class` above it in the hunk at a smaller indent, else the hunk header's."""
    files: set[str] = set()
    functions: set[str] = set()
    changed: list[str] = []
    path = ""
    context: list[str] = []
    header_def = ""
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split()
            path = parts[-1][2:] if parts[-1].startswith("b/") else parts[-1]
            files.add(path)
            continue
        if line.startswith(("--- ", "+++ ", "index ", "new file", "deleted file", "similarity", "rename")):
            continue
        hunk = HUNK.match(line)
        if hunk:
            context = []
            d = DEF.match(hunk.group(2))
            header_def = d.group(2) if d else ""
            continue
        if not path or line[:1] not in ("+", "-", " "):
            continue
        body = line[1:]
        if line[:1] in "+-" and body.strip():
            changed.append(f"{path}:{line[:1]}{body.strip()}")
            name = _enclosing(context, body) or header_def
            if name:
                functions.add(f"{path}::{name}")
        if line[:1] in (" ", "-"):
            context.append(body)
        if line[:1] == "+" and DEF.match(body):
            context.append(body)
    return files, functions, tuple(changed)


def _enclosing(context: list[str], line: str) -> str:
    own = DEF.match(line)
    if own:
        return own.group(2)
    indent = len(line) - len(line.lstrip())
    for prev in reversed(context):
        d = DEF.match(prev)
        if d and len(d.group(1)) < indent:
            return d.group(2)
    return ""


def shingles(text: str) -> set[str]:
    words = WORD.findall(text.lower())
    return {" ".join(words[i : i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1))} if words else set()


def _item(id_: str, repo: str, patch: str, tests: list[str], statement: str) -> Item:
    files, functions, changed = touched(patch)
    return Item(id_, repo, patch, set(tests), statement, files, functions, changed, shingles(statement))


def _listed(config: dict[str, Any]) -> list[str]:
    """The FAIL_TO_PASS tests: what a task is about (PASS_TO_PASS lists of one repository overlap by nature)."""
    value = config.get("FAIL_TO_PASS") or []
    return json.loads(value) if isinstance(value, str) else [str(v) for v in value]


def _folder_item(folder: Path) -> Item:
    def read(rel: str) -> str:
        p = folder / rel
        return p.read_text(errors="replace") if p.is_file() else ""

    try:
        config = json.loads(read("tests/config.json") or "{}")
        meta = tomllib.loads(read("task.toml")).get("metadata", {})
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{folder}: unreadable task files ({exc})") from None
    repo = str(meta.get("repo") or config.get("repo") or repo_from_task_id(folder.name) or "")
    return _item(folder.name, repo, patch_of_solve(read("solution/solve.sh")), _listed(config), read("instruction.md"))


def read_side(path: Path) -> list[Item]:
    """The tasks of a folder of task folders, or the rows of a SWE-bench JSONL file."""
    if path.is_dir():
        folders = sorted(p for p in path.iterdir() if p.is_dir() and (p / "task.toml").is_file())
        if not folders:
            raise UserError(f"{path}: no task folders (a folder with task.toml) in it")
        return [_folder_item(p) for p in folders]
    if not path.is_file():
        raise UserError(f"no such tasks folder or JSONL file: {path}")
    if path.suffix == ".tsv":
        return read_profiles(path)
    items = []
    for n, row in json_lines(path, prefix=f"{path}: "):
        if not isinstance(row, dict) or not isinstance(row.get("instance_id"), str):
            raise UserError(f"{path}: line {n}: no instance_id")
        repo = str(row.get("repo") or repo_from_task_id(row["instance_id"]) or "")
        statement = str(row.get("problem_statement") or "")
        items.append(_item(row["instance_id"], repo, str(row.get("patch") or ""), _listed(row), statement))
    if not items:
        raise UserError(f"{path}: no rows")
    return items


def read_profiles(path: Path) -> list[Item]:
    """SWE-smith's environment profiles (`OWNER/NAME<TAB>COMMIT` lines): repositories only, no patch or test."""
    items = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        repo, _, commit = raw.strip().partition("\t")
        if "/" not in repo or not commit.strip():
            raise UserError(f"{path}:{n}: not an OWNER/NAME<TAB>COMMIT line")
        items.append(Item(f"{repo}@{commit.strip()[:8]}", repo, "", set(), ""))
    if not items:
        raise UserError(f"{path}: no profiles")
    return items


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


def audit(pool_path: Path, eval_path: Path, threshold: float = DEFAULT_THRESHOLD) -> Overlap:
    if not 0 < threshold <= 1:
        raise UserError(f"--threshold must be in (0, 1], got {threshold}")
    pool, evals = read_side(pool_path), read_side(eval_path)
    found: dict[tuple[str, str], tuple[set[str], list[str]]] = {}

    def flag(p: Item, e: Item, kind: str, detail: str) -> None:
        kinds, details = found.setdefault((p.id, e.id), (set(), []))
        kinds.add(kind)
        details.append(detail)

    by_repo: dict[str, list[Item]] = defaultdict(list)
    for e in evals:
        by_repo[e.repo].append(e)
    for p in pool:
        for e in by_repo.get(p.repo, []):
            if p.changed and p.changed == e.changed:
                flag(p, e, "same_patch", f"{len(p.changed)} changed lines")
            for fn in sorted(p.functions & e.functions):
                flag(p, e, "same_function", fn)
            for f in sorted(p.files & e.files):
                flag(p, e, "same_file", f)
            for t in sorted(p.tests & e.tests)[:5]:
                flag(p, e, "same_test", t)
    top = 0.0
    index: dict[str, list[int]] = defaultdict(list)  # shingle -> eval items holding it
    for i, e in enumerate(evals):
        for s in e.shingles:
            index[s].append(i)
    for p in pool:
        near = {i for s in p.shingles for i in index.get(s, ())}
        for i in sorted(near):
            sim = jaccard(p.shingles, evals[i].shingles)
            top = max(top, sim)
            if sim >= threshold:
                flag(p, evals[i], "similar_statement", f"jaccard {sim:.2f}")
    pairs = [
        Pair(pid, eid, [k for k in KINDS if k in kinds], details)
        for (pid, eid), (kinds, details) in sorted(found.items())
    ]
    counts = {k: sum(k in x.kinds for x in pairs) for k in KINDS}
    eval_in = {x.eval for x in pairs}
    return Overlap(
        pool=str(pool_path),
        eval=str(eval_path),
        pool_tasks=len(pool),
        eval_tasks=len(evals),
        threshold=threshold,
        max_similarity=round(top, 3),
        repos_shared=sorted({p.repo for p in pool} & {e.repo for e in evals}),
        counts=counts,
        pairs=pairs,
        pool_in_overlap=sorted({x.pool for x in pairs}),
        in_overlap=[e.id for e in evals if e.id in eval_in],
        out_of_overlap=[e.id for e in evals if e.id not in eval_in],
    )


def exclusions(eval_path: Path) -> str:
    """The exclusion list of an evaluation set: every function (else file) its reference patches change, one
    `OWNER/NAME:path::function` or `OWNER/NAME:path` line each, for `tasks synthesize --exclude`."""
    lines = set()
    for e in read_side(eval_path):
        with_function = {fn.split("::", 1)[0] for fn in e.functions}
        lines |= {f"{e.repo}:{fn}" for fn in e.functions}
        lines |= {f"{e.repo}:{f}" for f in e.files - with_function}
    head = f"# functions and files changed by the reference patches of {eval_path} (trialbook tasks overlap)\n"
    return head + "".join(f"{x}\n" for x in sorted(lines))

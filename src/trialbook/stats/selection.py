"""Choosing tasks: task-list files (`compare --split`, `plan`'s pool, `train report --eval-set`) and
repo names (`--exclude-repo` in `compare` and `train report`), one reader and one resolver for all.

A task-list file is any of (detected per file; the union of what the readers accepted before):
- a JSON list of task-id strings: `["django__django-1", ...]`;
- one id per line, blank lines and `#` comments (whole-line or trailing) ignored; a YAML list
  (`- id`, optionally quoted) reads the same way;
- JSON Lines, one object per line with `task_id` or `instance_id` (SWE-bench's field);
- the JSON object `tasks overlap --json` writes: its `in_overlap` list (the evaluation tasks a training pool
  overlaps), so `compare --split` compares in-overlap against out-of-overlap tasks.
Stricter than before where the readers disagreed: a JSON list entry that is not a string, a JSONL
object without either key, a line that is not valid JSON, or a file with no id at all is an error
(one line, exit 2) instead of being coerced or skipped.

A repo is named by its full `owner/name` or by its short `name`; a short name that matches two repos
(`a/utils`, `b/utils`) is an error that lists them, never a silent drop of both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import orjson

from trialbook.errors import UserError


def _jsonl_id(path: Path, number: int, line: str) -> str:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise UserError(f"{path}:{number}: not a JSON object ({exc})") from None
    value = obj.get("task_id") or obj.get("instance_id") if isinstance(obj, dict) else None
    if not isinstance(value, str) or not value:
        raise UserError(f"{path}:{number}: a JSON line needs a string task_id or instance_id")
    return value


def _overlap_report(text: str) -> list[str] | None:
    """The `in_overlap` ids of a `tasks overlap --json` report; None for any other text."""
    if not text.lstrip().startswith("{"):
        return None
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None  # JSON Lines
    if not isinstance(obj, dict) or not isinstance(obj.get("in_overlap"), list):
        return None
    return [str(x) for x in obj["in_overlap"] if isinstance(x, str) and x]


def read_task_list(path: Path, allow_empty: bool = False) -> list[str]:
    """Task ids of a task-list file, in file order without repeats (formats: see the module docstring).
    `allow_empty` for a list of tasks to leave out: `audit --write-tasks` of a clean run writes none."""
    if not path.is_file():
        raise UserError(f"no such task list: {path}")
    text = path.read_text()
    if text.lstrip().startswith("["):
        try:
            items = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise UserError(f"{path}: not a JSON list of task ids ({exc})") from None
        if not isinstance(items, list) or not all(isinstance(x, str) and x for x in items):
            raise UserError(f"{path}: task list entries must be non-empty strings")
        ids = items
    elif (overlap := _overlap_report(text)) is not None:
        ids = overlap
    else:
        ids = []
        for number, raw in enumerate(text.splitlines(), 1):
            if raw.strip().startswith("{"):
                ids.append(_jsonl_id(path, number, raw))
                continue
            line = raw.split("#", 1)[0].strip()
            if line.startswith("- "):  # a YAML list
                line = line[2:].strip().strip("'\"")
            if line:
                ids.append(line)
    if not ids and not allow_empty:
        raise UserError(f"{path}: no task ids")
    return list(dict.fromkeys(ids))


def short_name(repo: str) -> str:
    return repo.rsplit("/", 1)[-1]


def resolve_repos(
    wanted: Sequence[str],
    known: Iterable[str],
    missing: str = "no task of that repo in these runs",
    flag: str = "--exclude-repo",
) -> list[str]:
    """The full names of the repos named in `wanted` (full or short names), in order, without repeats."""
    repos = sorted(set(known))
    out: list[str] = []
    for w in wanted:
        hits = [w] if w in repos else [r for r in repos if short_name(r) == w]
        if not hits:
            raise UserError(f"{flag} {w}: {missing} (repos: {', '.join(repos) or 'none'})")
        if len(hits) > 1:
            raise UserError(f"{flag} {w}: ambiguous, matches {', '.join(hits)}; give the full owner/name")
        if hits[0] not in out:
            out.append(hits[0])
    return out

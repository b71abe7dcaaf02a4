"""JSONL trials, one object per line: the import format and the export format (round-trip exact).

Required: `task_id` and one of `outcome` / `resolved` / `reward` (1.0 = resolved). Optional fields
are listed in FIELD_TYPES; unknown keys are kept in the trial's `extra` and exported back as they were.
This is the hot path of bulk imports, so lines are checked by hand rather than through pydantic.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trialbook.errors import UserError
from trialbook.importers.common import Batch, import_run, narrow, parse_chunks
from trialbook.ledger.store import Ledger, dumps
from trialbook.records import GRADED, Outcome, Run, repo_from_task_id

OUTCOME_NAMES = frozenset(o.value for o in Outcome)
INT_FIELDS = ("step", "wv", "epoch", "tokens", "turns")
STR_FIELDS = ("exception", "exception_message", "started_at", "finished_at")
_NUMBER = frozenset((int, float))
# key -> the exact Python types its JSON value may decode to (None is always allowed); bool is
# excluded from numbers on purpose (type(True) is bool, not int). Keys not listed go to `extra`.
FIELD_TYPES: dict[str, frozenset[type]] = {
    "task_id": frozenset((str,)),
    "attempt": frozenset((int,)),
    "repo": frozenset((str,)),
    "outcome": frozenset((str,)),
    "resolved": frozenset((bool,)),
    "reward": _NUMBER,
    "duration_s": _NUMBER,
    "tests": frozenset((dict,)),
    "stack": frozenset((dict,)),
    **{k: frozenset((int,)) for k in INT_FIELDS},
    **{k: frozenset((str,)) for k in STR_FIELDS},
}
_TYPE_WORDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "an object"}
_repo_cache: dict[str, str | None] = {}


def _repo(task_id: str) -> str | None:
    if task_id not in _repo_cache:
        _repo_cache[task_id] = repo_from_task_id(task_id)
    return _repo_cache[task_id]


def _bad(lineno: int, msg: str) -> UserError:
    return UserError(f"line {lineno}: {msg}")


def _outcome_and_reward(obj: dict[str, Any], n: int, train: bool = False) -> tuple[str, float | None]:
    reward = obj.get("reward")
    outcome = obj.get("outcome")
    if outcome is not None:
        if outcome not in OUTCOME_NAMES:
            raise _bad(n, f"unknown outcome {outcome!r} (expected one of {', '.join(sorted(OUTCOME_NAMES))})")
        if reward is None and outcome in GRADED:
            reward = 1.0 if outcome == "resolved" else 0.0
        elif outcome == "resolved" and reward < 1.0:
            raise _bad(n, f"outcome 'resolved' contradicts reward {reward}")
        return outcome, reward
    resolved = obj.get("resolved")
    if resolved is not None:
        if reward is None:
            reward = 1.0 if resolved else 0.0
        return ("resolved" if resolved else "unresolved"), reward
    if reward is None:
        if train:  # a training trajectory cut off before it was graded (no result.json)
            return "incomplete", None
        raise _bad(n, "needs one of 'outcome', 'resolved' or 'reward'")
    return ("resolved" if reward >= 1.0 else "unresolved"), float(reward)


def _extra_and_types(obj: dict[str, Any], n: int) -> dict[str, Any] | None:
    """Type-check known keys in one pass; return the unknown ones (kept as `extra`)."""
    extra = None
    for key, value in obj.items():
        allowed = FIELD_TYPES.get(key)
        if allowed is None:
            if extra is None:
                extra = {}
            extra[key] = value
        elif value is not None and type(value) not in allowed:
            want = " or ".join(sorted({_TYPE_WORDS[t] for t in allowed}))
            raise _bad(n, f"{key} must be {want}, got {value!r}")
    return extra


def check_line(obj: Any, n: int, run_id: int, require_train_fields: bool = False) -> tuple[Any, ...]:
    """Check one decoded line and return its ledger row (TRIAL_COLUMNS order); the attempt slot
    holds the line's own `attempt` or None (numbered later, in file order, by `number_attempt`).

    `require_train_fields` (kind train): `step` and `wv` are required, and a line with none of
    outcome/resolved/reward is an `incomplete` trajectory rather than an error.
    """
    if type(obj) is not dict:
        raise _bad(n, "expected a JSON object")
    extra = _extra_and_types(obj, n)
    task_id = obj.get("task_id")
    if not task_id:
        raise _bad(n, "missing or empty 'task_id'")
    if require_train_fields and (obj.get("step") is None or obj.get("wv") is None):
        missing = " and ".join(repr(k) for k in ("step", "wv") if obj.get(k) is None)
        raise _bad(n, f"a training trajectory (--kind train) needs 'step' and 'wv'; {missing} missing")
    outcome, reward = _outcome_and_reward(obj, n, require_train_fields)
    attempt = obj.get("attempt")
    if attempt is not None and attempt < 0:
        raise _bad(n, f"attempt must be a non-negative integer, got {attempt!r}")
    g = obj.get
    tests, duration = g("tests"), g("duration_s")
    return (
        # one shared object per distinct string: pickled once per chunk on the way from the worker
        # process, and encoded to UTF-8 once by sqlite3 when bound
        run_id, sys.intern(task_id), attempt, g("repo") or _repo(task_id), sys.intern(outcome),
        None if reward is None else float(reward), g("step"), g("wv"), g("epoch"), g("exception"),
        g("exception_message"), None if duration is None else float(duration), g("tokens"), g("turns"),
        None if tests is None else dumps(tests), g("started_at"), g("finished_at"),
        None if extra is None else dumps(extra), None,
    )  # fmt: skip


def number_attempt(row: tuple[Any, ...], n: int, attempts: dict[str, set[int]]) -> tuple[Any, ...]:
    """Give the row its attempt: its own, else the count of earlier lines of its task; no duplicates."""
    task_id, attempt = row[1], row[2]
    seen = attempts.get(task_id)
    if seen is None:
        seen = attempts[task_id] = set()
    if attempt is None:
        attempt = len(seen)
        row = (*row[:2], attempt, *row[3:])
    if attempt in seen:
        raise _bad(n, f"duplicate attempt {attempt} for task {task_id!r}")
    seen.add(attempt)
    return row


def check_chunk(lines: list[tuple[int, bytes]], run_id: int, train: bool) -> tuple[list[int], Batch, list]:
    """Decode and check a chunk of (line number, line): line numbers, the narrowed rows, and any
    `stack` objects seen. Runs in a worker process for big files: it needs no state across lines.
    """
    try:  # one decode for the whole chunk; on failure, find the bad line
        objs = orjson.loads(b"[" + b",".join(line for _, line in lines) + b"]")
    except orjson.JSONDecodeError:
        objs = []
        for n, line in lines:
            try:
                objs.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise _bad(n, f"malformed JSON ({exc.msg})") from None
    numbers = [n for n, _ in lines]
    rows = [check_line(obj, n, run_id, train) for n, obj in zip(numbers, objs, strict=True)]
    stacks = [(n, obj["stack"]) for n, obj in zip(numbers, objs, strict=True) if type(obj) is dict and "stack" in obj]
    return numbers, narrow(rows), stacks


def import_jsonl(ledger: Ledger, path: Path, run_name: str, kind: str = "eval", replace: bool = False) -> int:
    stack: dict[str, Any] = {}

    def rows(run_id: int) -> Iterator[Batch]:
        attempts: dict[str, set[int]] = {}
        for numbers, batch, stacks in parse_chunks(path, run_id, kind == "train", check_chunk):
            for n, value in stacks:
                if stack and value != stack:
                    raise _bad(n, "'stack' must be one object, the same on every line that has it")
                stack.update(value)
            rows = batch.rows
            for k, n in enumerate(numbers):  # inlined number_attempt: this loop runs once per trial
                row = rows[k]
                seen = attempts.get(row[1])
                if seen is None or row[2] is not None or len(seen) in seen:
                    rows[k] = number_attempt(row, n, attempts)
                else:
                    seen.add(len(seen))
                    rows[k] = (row[0], row[1], len(seen) - 1, *row[3:])
            yield batch
        if not attempts:
            raise UserError(f"no trials in {path}")

    def save_stack(conn: Any, run_id: int) -> None:
        if stack:
            ledger.set_run_stack(conn, run_id, stack)

    run = Run(name=run_name, kind=kind, source=str(path))  # type: ignore[arg-type]
    return import_run(ledger, run, rows, replace=replace, after=save_stack)


def export_jsonl(ledger: Ledger, run_name: str, path: Path) -> int:
    """Write the run's current trials in the import format; returns the number written."""
    run = ledger.run(run_name)
    n = 0
    with path.open("wb") as fh:
        for t in ledger.trials(run["id"]):
            obj: dict[str, Any] = {"task_id": t["task_id"], "attempt": t["attempt"]}
            for key in ("repo", "outcome", "reward", *INT_FIELDS, *STR_FIELDS, "duration_s", "tests"):
                if t[key] is not None:
                    obj[key] = t[key]
            if t["extra"]:
                obj.update(t["extra"])
            if n == 0 and run["stack"]:
                obj["stack"] = run["stack"]
            fh.write(orjson.dumps(obj) + b"\n")
            n += 1
    return n

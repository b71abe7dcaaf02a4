"""JSONL trials, one object per line: the import format and the export format (round-trip exact).

Required: `task_id` and one of `outcome` / `resolved` / `reward` (1.0 = resolved). Optional fields
are listed in FIELD_TYPES; unknown keys are kept in the trial's `extra` and exported back as they were.
The import contract (outcomes.py): a reward lies in [0, 1] unless the run declares another range, the
result fields of a line agree (`outcomes.contradiction`), and times follow `records.parse_time`; an
error names the file and the line. A line `{"optimizer_step": {...}}` is one step of a training run
(the `import steps` format), which `export` writes after a run's trials.
This is the hot path of bulk imports: msgspec decodes and type-checks a line in one step, and only
a line it refuses takes the slow path that explains the problem (pydantic would be ten times slower).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
import orjson

from trialbook.errors import LineError, UserError
from trialbook.importers.blocks import block_lines, checked_blocks
from trialbook.importers.to_ledger import Batch, import_run, narrow
from trialbook.ledger import queries
from trialbook.ledger.steps import step_row
from trialbook.ledger.store import Ledger, dumps
from trialbook.outcomes import GRADED, REWARD_RANGE, Outcome, contradiction, reward_problem, scaled_reward
from trialbook.records import Run, iso_time, repo_from_task_id

OUTCOME_NAMES = frozenset(o.value for o in Outcome)
INT_FIELDS = ("step", "wv", "epoch", "tokens", "turns")
STR_FIELDS = ("exception", "exception_message")
TIME_FIELDS = ("started_at", "finished_at")
FLOAT_FIELDS = ("reward", "duration_s")
_NUMBER = frozenset((int, float))
# key -> the exact Python types its JSON value may decode to (None is always allowed); bool is
# excluded from numbers on purpose (type(True) is bool, not int). Keys not listed go to `extra`.
FIELD_TYPES: dict[str, frozenset[type]] = {
    "task_id": frozenset((str,)),
    "attempt": frozenset((int,)),
    "repo": frozenset((str,)),
    "outcome": frozenset((str,)),
    "resolved": frozenset((bool,)),
    **{k: _NUMBER for k in FLOAT_FIELDS},
    "tests": frozenset((dict,)),
    "stack": frozenset((dict,)),
    **{k: frozenset((int,)) for k in INT_FIELDS},
    **{k: frozenset((str,)) for k in STR_FIELDS},
    **{k: frozenset((str, int, float)) for k in TIME_FIELDS},
}
INT64 = (-(2**63), 2**63 - 1)  # what SQLite and PostgreSQL BIGINT store
Int = Annotated[int, msgspec.Meta(ge=INT64[0], le=INT64[1])]
Text = str | None


class Line(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    """The known fields of a line, as the fast decoder checks them while parsing.

    It accepts exactly the lines that FIELD_TYPES and `read_slowly` accept without unknown keys (a
    test compares the two); any line it refuses goes to `read_slowly`, which names the problem.
    """

    task_id: Annotated[str, msgspec.Meta(min_length=1)]
    attempt: Annotated[int, msgspec.Meta(ge=0, le=INT64[1])] | None = None
    repo: Text = None
    outcome: Literal[tuple(OUTCOME_NAMES)] | None = None  # type: ignore[valid-type]
    resolved: bool | None = None
    reward: float | None = None
    duration_s: float | None = None
    tests: dict[str, Any] | None = None
    stack: dict[str, Any] | None = None
    step: Int | None = None
    wv: Int | None = None
    epoch: Int | None = None
    tokens: Int | None = None
    turns: Int | None = None
    exception: Text = None
    exception_message: Text = None
    started_at: str | float | None = None
    finished_at: str | float | None = None


DECODE_LINE = msgspec.json.Decoder(Line).decode
_TYPE_WORDS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", dict: "an object"}
_repo_cache: dict[str, str | None] = {}


def _repo(task_id: str) -> str | None:
    if task_id not in _repo_cache:
        _repo_cache[task_id] = repo_from_task_id(task_id)
    return _repo_cache[task_id]


def _outcome_and_reward(
    outcome: str | None,
    resolved: bool | None,
    reward: float | None,
    n: int,
    train: bool,
    reward_range: tuple[float, float] = REWARD_RANGE,
) -> tuple[str, float | None]:
    if reward is not None and (problem := reward_problem(reward, reward_range)):
        raise LineError(n, problem)
    # two or more result fields given: they must agree (the hot path, outcome alone, skips the call)
    given = (outcome is not None) + (resolved is not None) + (reward is not None)
    if given > 1 and (problem := contradiction(outcome, resolved, reward, full=reward_range[1])):
        raise LineError(n, problem)
    if reward is not None:
        reward = scaled_reward(reward, reward_range)
    if outcome is not None:
        if reward is None and outcome in GRADED:
            reward = 1.0 if outcome == "resolved" or resolved else 0.0
        return outcome, reward
    if resolved is not None:
        if reward is None:
            reward = 1.0 if resolved else 0.0
        return ("resolved" if resolved else "unresolved"), reward
    if reward is None:
        if train:  # a training trajectory cut off before it was graded (no result.json)
            return "incomplete", None
        raise LineError(n, "needs one of 'outcome', 'resolved' or 'reward'")
    return ("resolved" if reward >= 1.0 else "unresolved"), reward


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
            raise LineError(n, f"{key} must be {want}, got {value!r}")
        elif type(value) is int and not INT64[0] <= value <= INT64[1] and float not in allowed:
            raise LineError(n, f"{key} must fit in a 64-bit integer, got {value}")
    return extra


def read_slowly(raw: bytes, n: int) -> tuple[Line, dict[str, Any] | None]:
    """A line the fast decoder refused: say exactly what is wrong with it, or return it with its
    unknown keys (kept as the trial's `extra`)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise LineError(n, f"malformed JSON ({exc.msg})") from None
    if type(obj) is not dict:
        raise LineError(n, "expected a JSON object")
    extra = _extra_and_types(obj, n)
    if not obj.get("task_id"):
        raise LineError(n, "missing or empty 'task_id'")
    outcome, attempt = obj.get("outcome"), obj.get("attempt")
    if outcome is not None and outcome not in OUTCOME_NAMES:
        raise LineError(n, f"unknown outcome {outcome!r} (expected one of {', '.join(sorted(OUTCOME_NAMES))})")
    if attempt is not None and attempt < 0:
        raise LineError(n, f"attempt must be a non-negative integer, got {attempt!r}")
    floats = (*FLOAT_FIELDS, *TIME_FIELDS)  # a number there decodes as a float on the fast path too
    known: dict[str, Any] = {
        k: float(v) if k in floats and v is not None and type(v) is not str else v
        for k, v in obj.items()
        if k in FIELD_TYPES
    }
    return Line(**known), extra


def read_line(raw: bytes, n: int) -> tuple[Line, dict[str, Any] | None]:
    """(the line's known fields, its unknown keys or None)."""
    try:
        return DECODE_LINE(raw), None
    except msgspec.MsgspecError:
        return read_slowly(raw, n)


def _time(value: str | float | None, field: str, n: int) -> str | None:
    if value is None:
        return None
    try:
        return iso_time(value, field)
    except ValueError as exc:
        raise LineError(n, str(exc)) from None


def line_row(
    line: Line,
    extra: dict[str, Any] | None,
    n: int,
    run_id: int,
    train: bool,
    reward_range: tuple[float, float] = REWARD_RANGE,
) -> tuple[Any, ...]:
    """The ledger row of a checked line (TRIAL_COLUMNS order); the attempt slot holds the line's own
    `attempt` or None (numbered later, in file order, by `AttemptNumbers`).

    `train` (kind train): `step` and `wv` are required, and a line with none of
    outcome/resolved/reward is an `incomplete` trajectory rather than an error.
    """
    if train and (line.step is None or line.wv is None):
        missing = " and ".join(repr(k) for k in ("step", "wv") if getattr(line, k) is None)
        raise LineError(n, f"a training trajectory (--kind train) needs 'step' and 'wv'; {missing} missing")
    outcome, reward = _outcome_and_reward(line.outcome, line.resolved, line.reward, n, train, reward_range)
    started, finished = line.started_at, line.finished_at
    if started is not None or finished is not None:
        started, finished = _time(started, "started_at", n), _time(finished, "finished_at", n)
    task_id, tests, duration = line.task_id, line.tests, line.duration_s
    return (
        # one shared object per distinct string: pickled once per block on the way from the worker
        # process, and encoded to UTF-8 once by sqlite3 when bound
        run_id, sys.intern(task_id), line.attempt, line.repo or _repo(task_id), sys.intern(outcome),
        None if reward is None else float(reward), line.step, line.wv, line.epoch, line.exception,
        line.exception_message, None if duration is None else float(duration), line.tokens, line.turns,
        None if tests is None else dumps(tests), started, finished,
        None if extra is None else dumps(extra), None,
    )  # fmt: skip


class AttemptNumbers:
    """Numbers attempts in file order: a line's own `attempt`, else the count of earlier lines of
    its task; the same attempt twice for one task is an error."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}  # lines so far per task
        self.seen: dict[str, set[int]] | None = None  # attempts per task, once any line gave its own

    def number(self, tasks: Sequence[str], given: Sequence[int | None], numbers: Sequence[int]) -> list[int]:
        """The attempt of each line (tasks, own attempts and line numbers in file order)."""
        counts = self.counts
        if self.seen is None and given.count(None) == len(given):  # the usual file: a count per task
            out = []
            for task in tasks:
                out.append(attempt := counts.get(task, 0))
                counts[task] = attempt + 1
            return out
        if self.seen is None:
            self.seen = {task: set(range(count)) for task, count in counts.items()}
        return [self._one(task, attempt, n) for task, attempt, n in zip(tasks, given, numbers, strict=True)]

    def _one(self, task: str, attempt: int | None, n: int) -> int:
        assert self.seen is not None
        seen = self.seen.setdefault(task, set())
        if attempt is None:
            attempt = len(seen)
        if attempt in seen:
            raise LineError(n, f"duplicate attempt {attempt} for task {task!r}")
        seen.add(attempt)
        self.counts[task] = len(seen)
        return attempt


STEP_LINE = b'{"optimizer_step"'


class Checked(NamedTuple):
    numbers: list[int]  # line numbers of the trial lines (from 1 at the block's start)
    batch: Batch  # their rows, narrowed
    stacks: list[tuple[int, Any]]  # (line, `stack` object) where a line has one
    steps: list[tuple[int, Any]]  # (line, step object) of `optimizer_step` lines


def check_block(data: bytes, run_id: int, train: bool, reward_range: tuple[float, float] = REWARD_RANGE) -> Checked:
    """Decode and check a block of lines. Needs no state across blocks, so it can run in a worker
    process (see importers.blocks)."""
    numbers, raws = block_lines(data)
    rows, stacks, steps, trial_numbers = [], [], [], []
    for n, raw in zip(numbers, raws, strict=True):
        if raw.startswith(STEP_LINE):
            obj = orjson.loads(raw)
            if len(obj) != 1:
                raise LineError(n, "an 'optimizer_step' line holds that one key")
            steps.append((n, obj["optimizer_step"]))
            continue
        line, extra = read_line(raw, n)
        rows.append(line_row(line, extra, n, run_id, train, reward_range))
        trial_numbers.append(n)
        if line.stack is not None:
            stacks.append((n, line.stack))
    return Checked(trial_numbers, narrow(rows), stacks, steps)


def parse_range(text: str | None) -> tuple[float, float] | None:
    """`--reward-range LO,HI` (finite, LO < HI), or None when not given."""
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--reward-range must be LO,HI (two numbers), not {text!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise UserError(f"--reward-range needs finite LO < HI, not {text!r}")
    return lo, hi


def import_jsonl(
    ledger: Ledger,
    path: Path,
    run_name: str,
    kind: str = "eval",
    replace: bool = False,
    reward_range: tuple[float, float] | None = None,
) -> int:
    stack: dict[str, Any] = {}
    step_rows: list[dict[str, Any]] = []

    def rows(run_id: int) -> Iterator[Batch]:
        attempts = AttemptNumbers()
        check = functools.partial(
            check_block, run_id=run_id, train=kind == "train", reward_range=reward_range or REWARD_RANGE
        )
        for before, (numbers, batch, stacks, steps) in checked_blocks(path, check):
            for n, value in stacks:
                if stack and value != stack:
                    raise LineError(before + n, "'stack' must be one object, the same on every line that has it")
                stack.update(value)
            for n, value in steps:
                last = step_rows[-1]["step"] if step_rows else None
                step_rows.append(step_row(value, before + n, run_id, last))
            if len(batch):
                try:
                    batch.values[2] = attempts.number(batch.values[1], batch.values[2], numbers)
                except LineError as exc:
                    raise exc.shifted(before) from None
                yield batch
        if not attempts.counts:
            raise UserError(f"no trials in {path}")

    def save_stack(conn: Any, run_id: int) -> None:
        if stack:
            ledger.set_run_stack(conn, run_id, stack)
        if step_rows:
            ledger.replace_steps(conn, run_id, step_rows, replace=True)

    config = {"reward_range": list(reward_range)} if reward_range else {}
    run = Run(name=run_name, kind=kind, source=str(path), config=config)
    try:
        return import_run(ledger, run, rows, replace=replace, after=save_stack)
    except LineError as exc:
        raise UserError(f"{path}: {exc}") from None


def export_jsonl(ledger: Ledger, run_name: str, path: Path) -> int:
    """Write the run's current trials in the import format, then its optimizer steps (one
    `optimizer_step` line each); returns the number of trials written."""
    run = ledger.get_run(run_name)
    n = 0
    with path.open("wb") as fh:
        for t in ledger.trial_rows(run.id):
            obj: dict[str, Any] = {"task_id": t.task_id, "attempt": t.attempt}
            for key in ("repo", "outcome", "reward", *INT_FIELDS, *STR_FIELDS, *TIME_FIELDS, "duration_s", "tests"):
                if (value := getattr(t, key)) is not None:
                    obj[key] = value
            if t.extra:
                obj.update(t.extra)
            if n == 0 and run.stack:
                obj["stack"] = run.stack
            fh.write(orjson.dumps(obj) + b"\n")
            n += 1
        for step in queries.step_rows(ledger, run.id):
            times = {k: v.isoformat(timespec="milliseconds") for k, v in
                     (("started_at", step.started_at), ("finished_at", step.finished_at)) if v is not None}  # fmt: skip
            fh.write(orjson.dumps({"optimizer_step": {"step": step.step, **times, **step.metrics}}) + b"\n")
    return n

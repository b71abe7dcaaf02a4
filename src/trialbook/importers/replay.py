"""`sim replay`: write a training log into the ledger as the run would have, step by step in (scaled) real time.

The log is what `sim rollouts` writes (or any `import jsonl --kind train` file with its `import steps` file).
Time runs `speed` times faster than the log's: step s is stored when its scaled `finished_at` comes, its
trajectories halfway through its wait (a group is ready before the step that trains on it finishes), both
with their times moved to now. Each step is one transaction, as a live trainer's writes would be; what
was never trained (a step after the last logged one) goes in last. `train watch` and the live page read
the run while this writes it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from trialbook.errors import LineError, UserError
from trialbook.files import json_lines
from trialbook.importers.jsonl import line_row, read_line
from trialbook.ledger.schema import steps as steps_table
from trialbook.ledger.steps import step_row
from trialbook.ledger.store import Ledger
from trialbook.records import Run


def _read(trajectories: Path, steps: Path) -> tuple[dict[int, list[tuple[int, bytes]]], list[dict[str, Any]]]:
    for p in (trajectories, steps):
        if not p.is_file():
            raise UserError(f"no such file: {p}")
    by_step: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    for n, raw in enumerate(trajectories.read_bytes().splitlines(), start=1):
        if raw.strip():
            step = orjson.loads(raw).get("step")
            if type(step) is not int:
                raise UserError(f"{trajectories}:{n}: a replayed trajectory needs an integer 'step'")
            by_step[step].append((n, raw))
    logged = [obj for _, obj in json_lines(steps, prefix=f"{steps}: ")]
    if not logged:
        raise UserError(f"no steps in {steps}")
    return by_step, logged


def _shift(value: Any, origin: datetime, wall0: datetime, speed: float) -> str | None:
    if value is None:
        return None
    t = datetime.fromisoformat(value) if isinstance(value, str) else datetime.fromtimestamp(value, UTC)
    return (wall0 + (t - origin) / speed).isoformat()


def replay(
    ledger: Ledger,
    trajectories: Path,
    steps: Path,
    run_name: str,
    speed: float = 1000.0,
    config: dict[str, Any] | None = None,
    on_step: Callable[[int], None] | None = None,
    create: bool = True,
) -> int:
    """Replay the log into a new run `run_name` (`create=False`: into that existing, empty run, which a
    watcher may already be reading); returns the number of steps written."""
    if speed <= 0:
        raise UserError(f"--speed must be above 0, got {speed}")
    by_step, logged = _read(trajectories, steps)
    first = logged[0].get("started_at") or logged[0].get("finished_at")
    if first is None:
        raise UserError(f"{steps}: the first step has no started_at/finished_at to replay from")
    origin = datetime.fromisoformat(first) if isinstance(first, str) else datetime.fromtimestamp(first, UTC)
    if create:
        with ledger.transaction() as conn:
            run_id = ledger.create_run(conn, Run(name=run_name, kind="train", source=str(trajectories),
                                                 config=config or {}))  # fmt: skip
    else:
        run_id = ledger.get_run(run_name).id
        if ledger.count_trials(run_id):
            raise UserError(f"run '{run_name}' already has trials: replay into a new or empty run")
    attempts: dict[str, int] = defaultdict(int)
    wall0 = datetime.now(UTC)
    mono0 = time.monotonic()

    def sleep_until(log_time: datetime) -> None:
        delay = (log_time - origin).total_seconds() / speed - (time.monotonic() - mono0)
        if delay > 0:
            time.sleep(delay)

    def write_trajectories(step: int) -> None:
        rows = []
        for n, raw in by_step.pop(step, []):
            line, extra = read_line(raw, n)
            if line.duration_s is not None:  # the log's seconds, run faster like its steps
                line.duration_s = line.duration_s / speed
            try:
                row = list(line_row(line, extra, n, run_id, train=True))
            except LineError as exc:
                raise UserError(f"{trajectories}: {exc}") from None
            row[2] = attempts[line.task_id] if line.attempt is None else line.attempt
            attempts[line.task_id] += 1
            rows.append(row)
        if rows:
            with ledger.transaction() as conn:
                ledger.insert_trials(conn, rows)

    prev_end = origin
    last = None
    for n, obj in enumerate(logged, start=1):
        obj = dict(obj)
        end = obj.get("finished_at")
        end_t = prev_end if end is None else (datetime.fromisoformat(end) if isinstance(end, str)
                                                else datetime.fromtimestamp(end, UTC))  # fmt: skip
        sleep_until(prev_end + (end_t - prev_end) / 2)
        write_trajectories(obj.get("step"))  # type: ignore[arg-type]
        sleep_until(end_t)
        for key in ("started_at", "finished_at"):
            obj[key] = _shift(obj.get(key), origin, wall0, speed)
        try:
            row = step_row(obj, n, run_id, last)
        except LineError as exc:
            raise UserError(f"{steps}: {exc}") from None
        last = row["step"]
        with ledger.transaction() as conn:
            conn.execute(steps_table.insert(), [row])
        if on_step is not None:
            on_step(last)
        prev_end = end_t
    for step in sorted(by_step):  # generated, never trained: the run was stopped
        write_trajectories(step)
    return len(logged)

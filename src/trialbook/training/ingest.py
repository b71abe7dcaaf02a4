"""`import steps`: one JSON object per optimizer step into the ledger's `steps` table.

A line holds `step` (non-negative integer, strictly increasing through the file), optional
`started_at` / `finished_at` (`records.parse_time`, the rule trials follow too: ISO-8601 text or Unix
seconds; stored as UTC ISO text) and any numeric
metrics (`raw_reward`, `entropy`, `grad_norm`, `kl`, ...), kept as the step's JSON `metrics`.
The whole file goes in one transaction: any bad line leaves the ledger untouched.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from trialbook.errors import LineError, UserError
from trialbook.files import json_lines
from trialbook.ledger import queries
from trialbook.ledger.store import Ledger, dumps
from trialbook.records import iso_time

TIME_FIELDS = ("started_at", "finished_at")


def step_row(obj: Any, n: int, run_id: int, last: int | None) -> dict[str, Any]:
    """The `steps` row of one decoded line (LineError when it is bad); `last`: the previous line's step."""
    if type(obj) is not dict:
        raise LineError(n, "expected a JSON object")
    step = obj.get("step")
    if type(step) is not int or not 0 <= step < 2**63:
        shown = repr(step) if not isinstance(step, int) or step.bit_length() < 100 else "a larger number"
        raise LineError(n, f"'step' must be a non-negative integer below 2^63, got {shown}")
    if last is not None and step <= last:
        word = "duplicated" if step == last else "out of order"
        raise LineError(n, f"step {step} is {word} (previous line had step {last})")
    row: dict[str, Any] = {"run_id": run_id, "step": step}
    for key in TIME_FIELDS:
        value = obj.get(key)
        try:
            row[key] = None if value is None else iso_time(value, key)
        except ValueError as exc:
            raise LineError(n, str(exc)) from None
    metrics = {}
    for key, value in obj.items():
        if key == "step" or key in TIME_FIELDS or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise LineError(n, f"metric {key!r} must be a number, got {value!r}")
        metrics[key] = value
    row["metrics"] = dumps(metrics)
    return row


def import_steps(ledger: Ledger, path: Path, run_name: str, replace: bool = False) -> int:
    """Attach the steps in `path` to the existing run `run_name`; returns how many were written."""
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    run_id = ledger.get_run(run_name).id
    rows: list[dict[str, Any]] = []
    last: int | None = None
    try:
        for n, obj in json_lines(path, prefix=f"{path}: "):
            row = step_row(obj, n, run_id, last)
            last = row["step"]
            rows.append(row)
    except LineError as exc:
        raise UserError(f"{path}: {exc}") from None
    if not rows:
        raise UserError(f"no steps in {path}")
    with ledger.transaction() as conn:
        ledger.replace_steps(conn, run_id, rows, replace)
    return len(rows)


def load_steps(ledger: Ledger, run_id: int) -> list[dict[str, Any]]:
    """The run's steps in step order, metrics decoded, times as aware datetimes (None when absent).

    Dicts of `ledger.rows.StepRow` for the training report; new code should read `queries.step_rows`.
    """
    return [asdict(row) for row in queries.step_rows(ledger, run_id)]

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
from trialbook.ledger.steps import step_row
from trialbook.ledger.store import Ledger


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

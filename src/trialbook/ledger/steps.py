"""One line of a trainer's step log as a `steps` row: the rule `import steps`, `import jsonl`, `sim replay` and the
TRL adapter's step callback all write by."""

from __future__ import annotations

from typing import Any

from trialbook.errors import LineError
from trialbook.ledger.store import dumps
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

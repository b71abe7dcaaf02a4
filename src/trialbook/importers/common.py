"""What every importer shares: turning a Trial into a ledger row, and the one-transaction import."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import orjson

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger, dumps
from trialbook.records import Run, Trial

CHUNK = 20_000


def json_lines(path: Path, prefix: str = "") -> Iterator[tuple[int, Any]]:
    """(line number, decoded value) for each non-blank line of a JSONL file.

    A missing file or a malformed line is a UserError naming the line (`prefix` goes first).
    """
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                yield n, orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise UserError(f"{prefix}line {n}: malformed JSON ({exc.msg})") from None


def trial_row(run_id: int, t: Trial) -> tuple[Any, ...]:
    """A positional row in TRIAL_COLUMNS order."""
    return (
        run_id, t.task_id, t.attempt, t.repo, t.outcome.value, t.reward, t.step, t.wv, t.epoch,
        t.exception, t.exception_message, t.duration_s, t.tokens, t.turns, dumps(t.tests),
        t.started_at, t.finished_at, dumps(t.extra), None,
    )  # fmt: skip


def _chunks(rows: Iterable[Sequence[Any]], size: int) -> Iterator[list[Sequence[Any]]]:
    chunk: list[Sequence[Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def import_run(
    ledger: Ledger,
    run: Run,
    rows: Callable[[int], Iterable[Sequence[Any]]],
    replace: bool = False,
    after: Callable[[Any, int], None] | None = None,
) -> int:
    """Create `run` and insert the rows `rows(run_id)` yields, all in one transaction.

    `after(conn, run_id)` runs inside the same transaction (stack updates, artifacts).
    Any exception rolls the whole import back. Returns the number of trials written.
    """
    count = 0
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, run, replace=replace)
        for chunk in _chunks(rows(run_id), CHUNK):
            ledger.insert_trials(conn, chunk)
            count += len(chunk)
        if after is not None:
            after(conn, run_id)
    return count

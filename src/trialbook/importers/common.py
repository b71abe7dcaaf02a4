"""What every importer shares: turning a Trial into a ledger row, and the one-transaction import."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from trialbook.ledger.store import Ledger, dumps
from trialbook.records import Run, Trial

CHUNK = 20_000


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

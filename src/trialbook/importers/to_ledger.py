"""What every importer shares: turning a Trial into a ledger row, and the one-transaction import."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from trialbook.ledger.schema import TRIAL_COLUMNS
from trialbook.ledger.store import Ledger
from trialbook.records import Run

CHUNK = 20_000


@dataclass
class Batch:
    """Trial values column by column, for `columns` only (the others are NULL in every row).

    Binding NULLs costs SQLite's executemany as much as binding values; most imported trials leave
    half the columns empty, so importers that produce many rows send them narrowed. Columns (not
    rows) also cross a process boundary in fewer, smaller pickles.
    """

    columns: tuple[str, ...]
    values: list[Sequence[Any]]  # one sequence per column, all of the same length

    def __len__(self) -> int:
        return len(self.values[0]) if self.values else 0

    def rows(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.values, strict=True)


ALWAYS = 3  # run_id, task_id, attempt: kept in every batch, at these positions


def narrow(rows: list[tuple[Any, ...]]) -> Batch:
    """Rows in TRIAL_COLUMNS order as a Batch without the columns that are NULL in every row."""
    columns = [list(map(operator.itemgetter(i), rows)) for i in range(len(TRIAL_COLUMNS))]  # 2x zip(*rows)
    keep = [i for i, values in enumerate(columns) if i < ALWAYS or values.count(None) < len(values)]
    return Batch(tuple(TRIAL_COLUMNS[i] for i in keep), [columns[i] for i in keep])


def _chunks(rows: Iterable[Any], size: int) -> Iterator[Any]:
    """Single rows grouped into lists of `size`; Batches pass through as they are."""
    chunk: list[Sequence[Any]] = []
    for row in rows:
        if isinstance(row, Batch):
            if chunk:
                yield chunk
                chunk = []
            yield row
            continue
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def import_run(
    ledger: Ledger,
    run: Run,
    rows: Callable[[int], Iterable[Sequence[Any] | Batch]],
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
            if isinstance(chunk, Batch):
                ledger.insert_trials(conn, chunk.rows(), chunk.columns)
            else:
                ledger.insert_trials(conn, chunk)
            count += len(chunk)
        if after is not None:
            after(conn, run_id)
    return count

"""What every importer shares: turning a Trial into a ledger row, and the one-transaction import."""

from __future__ import annotations

import functools
import multiprocessing
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from trialbook.errors import UserError
from trialbook.ledger.schema import TRIAL_COLUMNS
from trialbook.ledger.store import Ledger, dumps
from trialbook.records import Run, Trial

CHUNK = 20_000
T = TypeVar("T")


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


PARALLEL_MIN_BYTES = 8 << 20  # below this a worker process costs more than it saves
LINES_PER_CHUNK = 20_000
WORKERS = 2  # checking lines costs about what inserting them does; two workers keep the writer busy


def _line_chunks(path: Path) -> Iterator[list[tuple[int, bytes]]]:
    chunk: list[tuple[int, bytes]] = []
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                chunk.append((n, line))
                if len(chunk) >= LINES_PER_CHUNK:
                    yield chunk
                    chunk = []
    if chunk:
        yield chunk


def parse_chunks(path: Path, run_id: int, train: bool, check: Callable[..., T]) -> Iterator[T]:
    """`check(lines, run_id, train)` over the file's line chunks, in file order.

    Big files are checked in a worker process while this one writes to the ledger (SQLite's
    inserts and Python's JSON checks then use both cores); an error in the worker (a UserError
    naming the line) is raised here, inside the caller's transaction.
    """
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    work = functools.partial(check, run_id=run_id, train=train)
    if path.stat().st_size < PARALLEL_MIN_BYTES:
        yield from map(work, _line_chunks(path))
        return
    with multiprocessing.get_context("fork").Pool(WORKERS) as pool:
        yield from pool.imap(work, _line_chunks(path))


@dataclass
class Batch:
    """Trial rows that carry only `columns` (the others are NULL in every row of the batch).

    Binding NULLs costs SQLite's executemany as much as binding values; most imported trials leave
    half the columns empty, so importers that produce many rows send them narrowed.
    """

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]


ALWAYS = 3  # run_id, task_id, attempt: kept in every batch, at these positions


def narrow(rows: list[tuple[Any, ...]]) -> Batch:
    """Drop the columns that are NULL in every row (rows in TRIAL_COLUMNS order)."""
    keep = [*range(ALWAYS), *(i for i in range(ALWAYS, len(TRIAL_COLUMNS)) if any(r[i] is not None for r in rows))]
    return Batch(tuple(TRIAL_COLUMNS[i] for i in keep), list(map(operator.itemgetter(*keep), rows)))


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
                ledger.insert_trials(conn, chunk.rows, chunk.columns)
            else:
                ledger.insert_trials(conn, chunk)
            count += len(chunk.rows) if isinstance(chunk, Batch) else len(chunk)
        if after is not None:
            after(conn, run_id)
    return count

"""A line-oriented file checked block by block, in worker processes when it is big.

Each worker opens the file itself and checks every WORKERS-th block of BLOCK_BYTES; the main
process receives the results in file order over one pipe per worker and writes them to the ledger.
Nothing but the results crosses a process boundary, and the main process runs no helper threads:
sqlite3 releases the GIL around every row it inserts, and a busy second thread would then make
the writer wait a scheduler tick per row.
"""

from __future__ import annotations

import gc
import multiprocessing
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, TypeVar

from trialbook.errors import LineError, UserError

BLOCK_BYTES = 2 << 20
PARALLEL_MIN_BYTES = 8 << 20  # below this, starting worker processes costs more than they save
WORKERS = 2  # checking a line costs about what inserting it does: two checkers keep the writer busy
T = TypeVar("T")


def read_block(fh: IO[bytes], start: int, end: int) -> bytes:
    """The bytes of the lines that begin in [start, end): consecutive ranges partition the file."""
    fh.seek(max(start - 1, 0))
    if start > 0:
        fh.readline()  # the rest of a line that began before `start` belongs to an earlier block
    first = fh.tell()
    if first >= end:
        return b""
    data = fh.read(end - first)
    return data if data.endswith(b"\n") else data + fh.readline()


def block_lines(data: bytes) -> tuple[list[int], list[bytes]]:
    """(line numbers counted from 1 at the block's start, lines) for the block's non-blank lines."""
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()
    numbers = [n for n, line in enumerate(lines, 1) if line.strip()]
    if len(numbers) < len(lines):
        lines = [lines[n - 1] for n in numbers]
    return numbers, lines


def _bounds(path: Path) -> list[tuple[int, int]]:
    size = path.stat().st_size
    return [(start, min(start + BLOCK_BYTES, size)) for start in range(0, size, BLOCK_BYTES)]


def _worker(path: Path, bounds: list[tuple[int, int]], check: Callable[[bytes], Any], out: Connection) -> None:
    # A checker allocates millions of short-lived objects and no reference cycles: the cyclic
    # collector would only cost a fifth of its time. The process ends with the file.
    gc.disable()
    with path.open("rb") as fh:
        for start, end in bounds:
            data = read_block(fh, start, end)
            try:
                out.send(("ok", data.count(b"\n"), check(data)))
            except LineError as exc:
                out.send(("bad", 0, exc))
                return
            except Exception:  # a bug, not bad input: the main process re-raises it with this traceback
                out.send(("crash", 0, traceback.format_exc()))
                return


def _in_order(path: Path, check: Callable[[bytes], T]) -> Iterator[tuple[str, int, Any]]:
    """("ok", newlines, result) per block in file order; a ("bad"|"crash", 0, why) ends it."""
    bounds = _bounds(path)
    if path.stat().st_size < PARALLEL_MIN_BYTES:
        with path.open("rb") as fh:
            for start, end in bounds:
                data = read_block(fh, start, end)
                try:
                    yield "ok", data.count(b"\n"), check(data)
                except LineError as exc:
                    yield "bad", 0, exc
        return
    ctx = multiprocessing.get_context("fork")
    pipes = [ctx.Pipe(duplex=False) for _ in range(WORKERS)]
    workers = [
        ctx.Process(target=_worker, args=(path, bounds[k::WORKERS], check, pipes[k][1]), daemon=True)
        for k in range(WORKERS)
    ]
    try:
        for worker in workers:
            worker.start()
        for k in range(len(bounds)):
            yield pipes[k % WORKERS][0].recv()
    finally:  # also when the caller stops early (an error while writing): no worker outlives the import
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()
        for receive, send in pipes:
            receive.close()
            send.close()


def checked_blocks(path: Path, check: Callable[[bytes], T]) -> Iterator[tuple[int, T]]:
    """(lines before the block, check(block bytes)) for each block of the file, in file order.

    `check` numbers lines from 1 at its block's start and raises LineError for a bad one; the
    error reaches the caller with the line's number in the file, inside the caller's transaction.
    """
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    before = 0
    for status, newlines, result in _in_order(path, check):
        if status == "bad":
            raise result.shifted(before)
        if status == "crash":
            raise RuntimeError(f"a worker process failed:\n{result}")
        yield before, result
        before += newlines

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
import signal
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import IO, Any, TypeVar

from trialbook.errors import LineError, TrialbookError, UserError

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


def _bounds(size: int) -> list[tuple[int, int]]:
    return [(start, min(start + BLOCK_BYTES, size)) for start in range(0, size, BLOCK_BYTES)]


def _checked(check: Callable[[bytes], T], data: bytes) -> tuple[str, int, Any]:
    """("ok", newlines, check(data)), or ("bad", 0, LineError) or ("crash", 0, traceback text)."""
    try:
        return "ok", data.count(b"\n"), check(data)
    except LineError as exc:
        return "bad", 0, exc
    except Exception:  # a bug, not bad input: re-raised by the caller with this traceback
        return "crash", 0, traceback.format_exc()


def _worker(
    path: Path, bounds: list[tuple[int, int]], check: Callable[[bytes], Any], out: Connection, others: list[Connection]
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's: it rolls back, then stops us
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # blocked by the parent until now
    for end in others:  # pipe ends this process inherited but does not use: a send to a dead main must fail
        end.close()
    # A checker allocates millions of short-lived objects and no reference cycles: the cyclic
    # collector would only cost a fifth of its time. The process ends with the file.
    gc.disable()
    try:
        with path.open("rb") as fh:
            for start, stop in bounds:
                result = _checked(check, read_block(fh, start, stop))
                out.send(result)
                if result[0] != "ok":
                    return
    except BrokenPipeError:  # the main process is gone (killed): nobody is left to tell
        return


def _in_order(path: Path, check: Callable[[bytes], T]) -> Iterator[tuple[str, int, Any]]:
    """_checked(check, block) for each block in file order; a result other than "ok" is the last."""
    size = path.stat().st_size
    bounds = _bounds(size)
    if size < PARALLEL_MIN_BYTES:
        with path.open("rb") as fh:
            for start, stop in bounds:
                yield _checked(check, read_block(fh, start, stop))
        return
    ctx = multiprocessing.get_context("fork")
    pipes = [ctx.Pipe(duplex=False) for _ in range(WORKERS)]
    ends = [e for pipe in pipes for e in pipe]
    workers = [
        ctx.Process(
            target=_worker,
            args=(path, bounds[k::WORKERS], check, pipes[k][1], [e for e in ends if e is not pipes[k][1]]),
            daemon=True,
        )
        for k in range(WORKERS)
    ]
    try:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # until a worker ignores Ctrl-C
        try:
            for worker in workers:
                worker.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        for _, send in pipes:  # the workers' ends: a worker that dies then reads as EOF here, not a hang
            send.close()
        for k in range(len(bounds)):
            try:
                yield pipes[k % WORKERS][0].recv()
            except EOFError:
                raise TrialbookError("a checker process died (killed?); nothing was imported") from None
    finally:  # also when the caller stops early (an error while writing, Ctrl-C): no worker outlives the import
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            worker.join()
        for end in ends:
            end.close()


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
            raise RuntimeError(f"checking a block of {path} failed:\n{result}")
        yield before, result
        before += newlines

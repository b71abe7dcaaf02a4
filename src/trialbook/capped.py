"""A byte sink with a cap: output written past `limit` bytes is dropped and `over` says so. Whatever a command
prints is the code under test's to choose (a forged `tar` can stream without end, with no file behind it), so every
copy of it onto the harness's disk goes through one (sandbox/box.py's exports, verify/runner.py's test log)."""

from __future__ import annotations

from typing import Any, Protocol


class _Writes(Protocol):
    def write(self, data: bytes | bytearray, /) -> Any: ...


class CappedSink:
    """Keeps at most `limit` bytes written to it in `sink`, then drops the rest (`over`)."""

    def __init__(self, sink: _Writes, limit: int) -> None:
        self.sink, self.limit, self.over = sink, limit, False
        self.left = limit

    def write(self, data: bytes | bytearray, /) -> None:
        self.left -= len(data)
        self.over = self.over or self.left < 0
        if not self.over:
            self.sink.write(data)

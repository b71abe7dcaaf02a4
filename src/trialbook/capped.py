"""Where bytes go (`Sink`: a command's output, an exported tar) and a sink with a cap (`CappedSink`): output written
past `limit` bytes is dropped and `over` says so. Whatever a command prints is the code under test's to choose (a
forged `tar` can stream without end, with no file behind it), so every copy of it onto the harness's disk goes through
one (sandbox/box.py's exports, verify/runner.py's test log)."""

from __future__ import annotations

from typing import Any, Protocol


class Sink(Protocol):
    """Where a command's whole output, or an exported tar, goes (a file, a wrapper that caps it, a counter): all a
    backend calls on it is `write` (the Box protocol's sinks, sandbox/backend.py)."""

    def write(self, data: bytes | bytearray, /) -> Any: ...


class CappedSink:
    """Keeps at most `limit` bytes written to it in `sink`, then drops the rest (`over`)."""

    def __init__(self, sink: Sink, limit: int) -> None:
        self.sink, self.limit, self.over = sink, limit, False
        self.left = limit

    def write(self, data: bytes | bytearray, /) -> None:
        self.left -= len(data)
        self.over = self.over or self.left < 0
        if not self.over:
            self.sink.write(data)

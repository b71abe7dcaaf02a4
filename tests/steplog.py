"""Training steps logged back to back from 2026-01-01 UTC, each lasting the given seconds (stall tests)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def timed_steps(waits: list[float]) -> list[dict]:
    t, out = datetime(2026, 1, 1, tzinfo=UTC), []
    for i, w in enumerate(waits, start=1):
        out.append({"step": i, "started_at": t, "finished_at": t + timedelta(seconds=w)})
        t += timedelta(seconds=w)
    return out

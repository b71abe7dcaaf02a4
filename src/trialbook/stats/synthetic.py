"""Synthetic runs with known truth, in the `import jsonl` format: an anchor dataset and
simulated systems (per-task solve probabilities, K attempts). Used by tests, the benchmark and demos.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

# The anchor dataset: task-score cells (base, cand) -> number of tasks, 500 tasks with 2 attempts each,
# chosen so that the paired analysis gives a known answer (the stats tests check compare against it).
ANCHOR_CELLS: dict[tuple[float, float], int] = {
    (0.0, 0.0): 125, (0.5, 0.5): 30, (1.0, 1.0): 203,
    (0.0, 0.5): 35, (0.5, 1.0): 35, (0.0, 1.0): 13,
    (0.5, 0.0): 25, (1.0, 0.5): 24, (1.0, 0.0): 10,
}  # fmt: skip
REPOS: tuple[str, ...] = ("acme__widgets", "acme__gadgets", "globex__core", "initech__tps")


def task_ids(n: int, repos: Sequence[str] = REPOS) -> list[str]:
    """`owner__name-<i>` ids (repo `owner/name`), spread over `repos` round-robin."""
    return [f"{repos[i % len(repos)]}-{1000 + i}" for i in range(n)]


def _lines(ids: Sequence[str], successes: Iterable[Sequence[bool]]) -> list[dict[str, Any]]:
    return [
        {"task_id": t, "attempt": a, "resolved": bool(ok)}
        for t, outcomes in zip(ids, successes, strict=True)
        for a, ok in enumerate(outcomes)
    ]


def anchor_runs(attempts: int = 2) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The anchor dataset as (base lines, cand lines); a score s means round(s*K) resolved attempts."""
    pairs = [cell for cell, n in ANCHOR_CELLS.items() for _ in range(n)]
    ids = task_ids(len(pairs))

    def outcomes(score: float) -> list[bool]:
        k = round(score * attempts)
        return [i < k for i in range(attempts)]

    return _lines(ids, (outcomes(b) for b, _ in pairs)), _lines(ids, (outcomes(c) for _, c in pairs))


def simulate_run(probs: np.ndarray, attempts: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """One run: task i resolved in each attempt independently with probability probs[i]."""
    draws = rng.random((probs.size, attempts)) < probs[:, None]
    return _lines(task_ids(probs.size), draws)


def write_jsonl(path: Path, lines: Sequence[dict[str, Any]], stack: dict[str, Any] | None = None) -> Path:
    with path.open("wb") as fh:
        for i, obj in enumerate(lines):
            if i == 0 and stack:
                obj = {**obj, "stack": stack}
            fh.write(orjson.dumps(obj) + b"\n")
    return path

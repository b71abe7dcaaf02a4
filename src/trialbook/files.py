"""Reading the input files users hand to trialbook (one JSONL reader for trials, steps and instances)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from trialbook.errors import UserError


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

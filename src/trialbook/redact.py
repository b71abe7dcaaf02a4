"""Secrets (endpoint API keys, secret headers, access tokens): kept in this process's memory only, and scrubbed
from every text trialbook writes (ledger rows, the run's config and stack, trial folders, log lines, pages).

A secret enters through `secret_value` (an environment variable or a file, never a value stored in a config) and
is registered here as it is read; `scrub` replaces every registered value in a text with `REDACTED`. The stored
config keeps where a secret came from (`env:VAR`, `file:PATH`), never the value.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path
from typing import Any

from trialbook.errors import UserError

REDACTED = "[redacted]"
MIN_SECRET_LEN = 6  # shorter values (a test's "x") would scrub ordinary words out of every log
# Header names whose value is a credential: given as env:VAR or file:PATH, never inline (it would be stored).
SECRET_HEADER = re.compile(r"authorization|api[-_]?key|token|secret|password|cookie|credential", re.IGNORECASE)

_secrets: set[str] = set()
_lock = threading.Lock()


def register(value: str | None) -> str | None:
    """Remember `value` as a secret of this process (scrubbed from whatever is written from now on)."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _lock:
            _secrets.add(value)
    return value


def scrub(text: str) -> str:
    """`text` with every registered secret replaced by REDACTED (the text itself where none is registered)."""
    if not _secrets or not isinstance(text, str):
        return text
    for value in sorted(_secrets, key=len, reverse=True):
        if value in text:
            text = text.replace(value, REDACTED)
    return text


def scrub_value(value: Any) -> Any:
    """`value` (JSON-shaped: dicts, lists, strings) with every string scrubbed."""
    if not _secrets:
        return value
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_value(v) for v in value]
    return value


def secret_value(source: str, what: str) -> str:
    """The secret `source` names: `env:VAR` (an environment variable) or `file:PATH` (a file's first line); the
    value is registered (scrubbed from every record). A source that gives nothing is a UserError naming `what`."""
    kind, sep, where = source.partition(":")
    if not sep or kind not in ("env", "file") or not where:
        raise UserError(f"{what}: a secret is given as env:VAR or file:PATH, never inline (it would be stored)")
    if kind == "env":
        value = os.environ.get(where, "").strip()
        if not value:
            raise UserError(f"{what}: the environment variable {where} is not set")
    else:
        try:
            value = (Path(where).expanduser().read_text().splitlines() or [""])[0].strip()
        except OSError as exc:
            raise UserError(f"{what}: cannot read {where}: {exc.strerror or exc}") from None
        if not value:
            raise UserError(f"{what}: {where} is empty")
    register(value)
    return value


def is_secret_header(name: str) -> bool:
    return bool(SECRET_HEADER.search(name))

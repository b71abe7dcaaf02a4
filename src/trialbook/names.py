"""Run names: one safe character set for every entry point, so a name can never become a path.

A run's folder is `<runs-dir>/<name>` and its containers carry the name in a label, so a name
is refused (one line, exit 2) unless it is 1-128 characters of letters, digits and `. _ - + = @`,
starts with a letter, digit or `_`, holds no `..` and does not end in `.superseded` (the folder
`rerun` moves replaced trials to).
"""

from __future__ import annotations

import re

from trialbook.errors import UserError

MAX_LEN = 128
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+=@-]*")
RESERVED_SUFFIX = ".superseded"


def check_run_name(name: str) -> str:
    """`name` when it is a valid run name; else UserError (exit 2) saying what is allowed."""
    if (
        not isinstance(name, str)
        or not 0 < len(name) <= MAX_LEN
        or not _NAME.fullmatch(name)
        or ".." in name
        or name.endswith(RESERVED_SUFFIX)
    ):
        shown = repr(name[:60] + ("..." if len(name) > 60 else "")) if isinstance(name, str) else repr(name)
        raise UserError(
            f"invalid run name {shown}: use 1-{MAX_LEN} letters, digits and . _ - + = @ (first a letter, digit "
            f"or _), no '..', no path separators, not ending in '{RESERVED_SUFFIX}'"
        )
    return name


def safe_name(text: str) -> str:
    """A valid run name made from arbitrary text (a folder or system name used as a default)."""
    clean = re.sub(r"[^A-Za-z0-9_.+=@-]+", "-", text).replace("..", ".").lstrip(".-+=@")[:MAX_LEN]
    clean = clean.removesuffix(RESERVED_SUFFIX) or "run"
    return clean if _NAME.fullmatch(clean) else "run"

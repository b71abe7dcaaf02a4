"""The `trialbook` command line: thin wrappers, every command is one call into a module.

Each area registers its commands in its own module. `main` imports only the area that owns the
command being run (start-up time matters for scripted use: `compare` in a loop, say); `--help`
and anything unknown load every area. `COMMAND_AREAS` is checked against the registered
commands by a test, so it cannot drift.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterable
from typing import Any

import typer

from trialbook.cli.common import app
from trialbook.errors import InputWarning, TrialbookError
from trialbook.redact import scrub

AREAS = ("data", "stats", "harness", "audit", "tasks", "training", "web", "agents")
COMMAND_AREAS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("import", "runs", "show", "export", "trials", "log", "ledger"), ("data",)),
    **dict.fromkeys(("compare", "plan", "prereg"), ("stats",)),
    **dict.fromkeys(
        ("run", "resume", "rerun", "clean", "policy", "quickstart", "validate", "grade", "reverify"), ("harness",)
    ),
    **dict.fromkeys(("regrade", "audit", "attribute"), ("audit",)),
    "tasks": ("tasks",),
    "agents": ("agents",),
    **dict.fromkeys(("train", "sim"), ("training",)),
    **dict.fromkeys(("serve", "report"), ("web",)),
}


def load(areas: Iterable[str] = AREAS) -> typer.Typer:
    """Register the commands of `areas` on `app` (idempotent) and return it."""
    for area in areas:
        try:
            __import__(f"trialbook.cli.{area}")
        except ImportError as exc:  # one broken area must not take every other command down with it
            print(f"warning: '{area}' commands unavailable: {exc}", file=sys.stderr)
    return app


def _command(argv: list[str]) -> str | None:
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _show_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """An InputWarning is one line on stderr ("warning: ..."); any other warning is shown as Python shows it."""
    if issubclass(category, InputWarning):
        print(f"warning: {message}", file=sys.stderr)
    else:
        _python_show(message, category, *args, **kwargs)


_python_show = warnings.showwarning


def main() -> None:
    warnings.showwarning = _show_warning
    load(COMMAND_AREAS.get(_command(sys.argv[1:]) or "", AREAS))
    try:
        app(prog_name="trialbook")
    except TrialbookError as exc:
        typer.echo(scrub(f"error: {exc}"), err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:  # a read from a damaged ledger (sqlalchemy's DBAPIError): one line, never the SQL
        orig = getattr(exc, "orig", None)
        if orig is None or not type(exc).__module__.startswith("sqlalchemy"):
            raise
        typer.echo(scrub(f"error: ledger read failed: {(str(orig).splitlines() or ['?'])[0]}"), err=True)
        sys.exit(1)

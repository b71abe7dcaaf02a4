"""The `trialbook` command line: thin wrappers, every command is one call into a module.

Each area registers its commands in its own module (data, stats, harness, audit, training).
"""

from __future__ import annotations

import sys

import typer

from trialbook.cli import data  # noqa: F401  (registers commands)
from trialbook.cli.common import app
from trialbook.errors import TrialbookError

for _area in ("stats", "harness", "audit", "training"):
    try:
        __import__(f"trialbook.cli.{_area}")
    except ImportError as exc:  # one broken area must not take every other command down with it
        if getattr(exc, "name", None) != f"trialbook.cli.{_area}":
            print(f"warning: '{_area}' commands unavailable: {exc}", file=sys.stderr)


def main() -> None:
    try:
        app()
    except TrialbookError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        sys.exit(130)

"""The Typer app and the options every command shares. Command modules register onto `app`."""

from __future__ import annotations

import json
import math
import sys
from typing import Annotated, Any

import typer

from trialbook.cli.aliases import AliasGroup
from trialbook.errors import UserError
from trialbook.names import check_run_name
from trialbook.redact import scrub

app = typer.Typer(
    cls=AliasGroup,  # old option spellings keep working (cli/aliases.py)
    help="Run agent trials, keep them in one ledger, compare runs with honest statistics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # plain Click help: Typer's rich help imports rich.markdown + markdown-it (~1/3 of `compare --help`)
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"trialbook {version('trialbook')}")
        except PackageNotFoundError:
            typer.echo("trialbook (not installed: run from a source tree)")
        raise typer.Exit()


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Run agent trials, keep them in one ledger, compare runs with honest statistics."""


Db = Annotated[
    str | None, typer.Option("--db", help="Ledger: SQLite path or postgresql:// URL [env TRIALBOOK_DB; ./trialbook.db]")
]


def _one_format(ctx: typer.Context, param: Any, value: bool) -> bool:
    """Typer callback: --json, --markdown and --csv exclude each other (refused before the command does anything)."""
    others = {"as_json", "markdown", "as_csv"} - {param.name}
    if value and any(ctx.params.get(name) for name in others):
        raise typer.BadParameter("give at most one of --json, --markdown and --csv")
    return value


Json = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.", callback=_one_format)]
Markdown = Annotated[
    bool, typer.Option("--markdown", help="Markdown on stdout (tables as pipe tables).", callback=_one_format)
]
Csv = Annotated[
    bool, typer.Option("--csv", help="The table(s) as CSV on stdout (other lines go to stderr).", callback=_one_format)
]
Replace = Annotated[bool, typer.Option("--replace", help="Overwrite a run of the same name.")]


def valid_run(value: Any) -> Any:
    """Typer callback: every run name given on the command line passes names.check_run_name."""
    for name in value if isinstance(value, list | tuple) else [value]:
        if name is not None:
            check_run_name(name)
    return value


def finite(param: typer.CallbackParam, value: Any) -> Any:
    """Typer callback of every float option: nan and inf are refused (Click's FLOAT parses them; a range's
    bounds let nan through), one line and exit 2 before the command does anything."""
    for number in value if isinstance(value, list | tuple) else [value]:
        if isinstance(number, float) and not math.isfinite(number):
            raise UserError(f"{param.opts[0]} must be a finite number, not {number}")
    return value


def writable_runs_dir(param: typer.CallbackParam, value: Any) -> Any:
    """Typer callback of --runs-dir: a folder runs can be written under, else one line and exit 2 before the
    ledger is opened (a full one is only a warning on each trial whose folder it cannot hold)."""
    from pathlib import Path

    from trialbook.harness.run.paths import unwritable

    problem = unwritable(Path(value))
    if problem:
        raise UserError(f"{param.opts[0]} {value}: {problem}")
    return value


RunName = Annotated[str | None, typer.Option("--run", help="Run name (default: from the source).", callback=valid_run)]
RunArg = Annotated[str, typer.Argument(help="Run name.", callback=valid_run)]


def comma_list(text: str | list[str] | None) -> list[str] | None:
    """A comma-separated option value (or a repeatable option's values, each may be comma-separated) as its
    non-empty items; None when the option was not given."""
    texts = ([text] if text else []) if isinstance(text, str) else text or []
    return [item.strip() for each in texts for item in each.split(",") if item.strip()] if texts else None


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def emit(data: Any, as_json: bool, human: Any, markdown: bool = False, as_csv: bool = False) -> None:
    """JSON on stdout (and nothing else) with --json, else the human renderer (as Markdown or CSV if asked)."""
    from trialbook.report import layout
    from trialbook.result_types import to_json

    fmt = layout.formats(markdown, as_csv)
    if as_json:
        # strict JSON: a non-finite number (from an older ledger) is null, never `Infinity`
        sys.stdout.write(json.dumps(_finite(to_json(data)), indent=2, default=str, allow_nan=False) + "\n")
    else:
        with layout.output(fmt):
            human(data)


def done(msg: str) -> None:
    """A status line for write commands, on stderr so stdout stays clean (secrets scrubbed: redact.py)."""
    typer.echo(scrub(msg), err=True)


def summary_reading(db: str | None) -> Any:
    """The ledger for `runs` / `show`: a SQLite file is read without SQLAlchemy (ledger/lite.py)."""
    from trialbook.ledger.lite import open_reads

    return open_reads(db)


def reading(db: str | None) -> Any:
    """The ledger for a command that only reads it: a missing SQLite file is an error, never created."""
    from trialbook.ledger.store import Ledger

    return Ledger(db, create=False, reads_only=True)

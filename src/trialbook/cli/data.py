"""Ledger commands: import, runs, show, export."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, Replace, RunArg, RunName, app, done, emit, valid_run
from trialbook.errors import UserError

# Every command imports what it needs inside its body: `runs` and `show` must not pay for the
# importers (pydantic records, msgspec, file parsers) at start-up.

import_app = typer.Typer(help="Import trials from other tools into the ledger.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("jsonl")
def import_jsonl_cmd(
    file: Path,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    kind: Annotated[str, typer.Option("--kind", help="eval or train.")] = "eval",
    replace: Replace = False,
    db: Db = None,
) -> None:
    """One trial per line (the format `export` writes)."""
    from trialbook.importers.jsonl import import_jsonl
    from trialbook.ledger.store import Ledger

    if kind not in ("eval", "train", "validate"):
        raise UserError(f"--kind must be eval, train or validate, not {kind!r}")
    n = import_jsonl(Ledger(db), file, run, kind=kind, replace=replace)
    done(f"imported {n} trials into run '{run}'")


@import_app.command("steps")
def import_steps_cmd(
    file: Path,
    run: Annotated[
        str, typer.Option("--run", help="The training run the steps belong to (must exist).", callback=valid_run)
    ],
    replace: Annotated[bool, typer.Option("--replace", help="Overwrite the run's existing steps.")] = False,
    db: Db = None,
) -> None:
    """One JSON object per optimizer step: step, started_at, finished_at and numeric metrics."""
    from trialbook.ledger.store import Ledger
    from trialbook.training.ingest import import_steps

    n = import_steps(Ledger(db), file, run, replace=replace)
    done(f"imported {n} steps into run '{run}'")


@import_app.command("swebench")
def import_swebench_cmd(
    results: Path,
    instances: Annotated[Path, typer.Option("--instances", help="SWE-bench instances JSONL.")],
    run: RunName = None,
    logs: Annotated[
        Path | None, typer.Option("--logs", help="Official harness logs: <id>/report.json, test_output.txt.")
    ] = None,
    replace: Replace = False,
    db: Db = None,
) -> None:
    """A SWE-bench results file: every instance is a trial, resolved or not."""
    from trialbook.importers.swebench import import_swebench
    from trialbook.ledger.store import Ledger

    name, n = import_swebench(Ledger(db), results, instances, run_name=run, logs=logs, replace=replace)
    done(f"imported {n} trials into run '{name}'")


@import_app.command("harbor")
def import_harbor_cmd(job_dir: Path, run: RunName = None, replace: Replace = False, db: Db = None) -> None:
    """A Harbor job folder (one sub-folder per trial with result.json)."""
    from trialbook.importers.harbor import import_harbor
    from trialbook.ledger.store import Ledger

    name, n = import_harbor(Ledger(db), job_dir, run_name=run, replace=replace)
    done(f"imported {n} trials into run '{name}'")


@app.command("runs")
def runs_cmd(as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None) -> None:
    """List runs with their resolved rates."""
    from trialbook.ledger.store import Ledger
    from trialbook.report import tables
    from trialbook.stats.summary import runs_summary

    emit(runs_summary(Ledger(db)), as_json, tables.print_runs, markdown, as_csv)


@app.command("show")
def show_cmd(
    run: RunArg, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None
) -> None:
    """One run: rate, judged count, outcomes, tags, per-repo rates, stack."""
    from trialbook.ledger.store import Ledger
    from trialbook.report import tables
    from trialbook.stats.summary import run_summary

    emit(run_summary(Ledger(db), run), as_json, tables.print_show, markdown, as_csv)


@app.command("export")
def export_cmd(
    run: RunArg,
    jsonl: Annotated[Path, typer.Option("--jsonl", help="Output file (the `import jsonl` format).")],
    db: Db = None,
) -> None:
    """Write a run's current trials as JSONL."""
    from trialbook.importers.jsonl import export_jsonl
    from trialbook.ledger.store import Ledger

    try:
        n = export_jsonl(Ledger(db), run, jsonl)
    except OSError as exc:
        raise UserError(f"cannot write {jsonl}: {exc.strerror}") from None
    done(f"exported {n} trials to {jsonl}")

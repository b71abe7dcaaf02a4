"""Ledger commands: import, runs, show, export, trials, log, ledger check."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.cli.common import (
    Csv,
    Db,
    Json,
    Markdown,
    Replace,
    RunArg,
    RunName,
    app,
    done,
    emit,
    reading,
    summary_reading,
    valid_run,
)  # fmt: skip
from trialbook.errors import UserError

# Every command imports what it needs inside its body: `runs` and `show` must not pay for the
# importers (pydantic records, msgspec, file parsers) at start-up.

RewardRange = Annotated[
    str | None, typer.Option("--reward-range", help="LO,HI: the run's rewards lie here, not in [0, 1].")
]
import_app = typer.Typer(help="Import trials from other tools into the ledger.", no_args_is_help=True)
app.add_typer(import_app, name="import")


@import_app.command("jsonl")
def import_jsonl_cmd(
    file: Path,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    kind: Annotated[str, typer.Option("--kind", help="eval or train.")] = "eval",
    reward_range: RewardRange = None,
    replace: Replace = False,
    db: Db = None,
) -> None:
    """One trial per line (the format `export` writes)."""
    from trialbook.importers.jsonl import import_jsonl, parse_range
    from trialbook.ledger.store import Ledger

    if kind not in ("eval", "train", "validate"):
        raise UserError(f"--kind must be eval, train or validate, not {kind!r}")
    n = import_jsonl(Ledger(db), file, run, kind=kind, replace=replace, reward_range=parse_range(reward_range))
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
    results: Annotated[
        Path,
        typer.Argument(
            help="A leaderboard results file, the harness's report <model>.<run_id>.json, or its log folder"
            " logs/run_evaluation/<run_id>/<model>."
        ),
    ],
    instances: Annotated[
        Path | None,
        typer.Option("--instances", help="SWE-bench instances JSONL (a leaderboard file needs it)."),
    ] = None,
    run: RunName = None,
    logs: Annotated[
        Path | None,
        typer.Option("--logs", help="Harness logs: <id>/report.json, test_output.txt (a report's are found)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Attach --logs even when their verdicts disagree with the results.")
    ] = False,
    replace: Replace = False,
    db: Db = None,
) -> None:
    """SWE-bench results: a leaderboard file (every instance a trial), or the harness's report or logs."""
    from trialbook.importers.swebench import import_swebench
    from trialbook.ledger.store import Ledger

    warnings: list[str] = []
    name, n = import_swebench(
        Ledger(db), results, instances, run_name=run, logs=logs, replace=replace, force=force, warnings=warnings
    )
    done(f"imported {n} trials into run '{name}'")
    for warning in warnings:
        done(f"warning: {warning}")


@import_app.command("harbor")
def import_harbor_cmd(
    job_dir: Path, run: RunName = None, reward_range: RewardRange = None, replace: Replace = False, db: Db = None
) -> None:
    """A Harbor job folder (one sub-folder per trial), or a folder of jobs (a run per job, or all in --run)."""
    from trialbook.importers.harbor import import_harbor
    from trialbook.importers.jsonl import parse_range
    from trialbook.ledger.store import Ledger

    ledger, rewards = Ledger(db), parse_range(reward_range)
    for name, n in import_harbor(ledger, job_dir, run_name=run, replace=replace, reward_range=rewards):
        done(f"imported {n} trials into run '{name}'")


runs_app = typer.Typer(help="List runs (no subcommand), or delete / rename one.")
app.add_typer(runs_app, name="runs")
Force = Annotated[bool, typer.Option("--force", help="Even when a logged preregistration check used the run.")]


@runs_app.callback(invoke_without_command=True)
def runs_cmd(
    ctx: typer.Context, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None
) -> None:
    """List runs with their resolved rates."""
    from trialbook.report import tables
    from trialbook.stats.run_summaries import runs_summary

    if ctx.invoked_subcommand is None:
        emit(runs_summary(summary_reading(db)), as_json, tables.print_runs, markdown, as_csv)


@runs_app.command("delete")
def runs_delete_cmd(run: RunArg, force: Force = False, db: Db = None) -> None:
    """Delete a run: its trials, artifacts and steps, in one transaction; then its trial folders."""
    from trialbook.harness.run.paths import run_folders
    from trialbook.ledger.admin import delete_run
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db, create=False)  # writes: a read-only ledger is refused before anything is done
    gone = delete_run(ledger, run, force=force, folders=run_folders(ledger.get_run(run).config, run))
    removed = "".join(f", removed {_shown(Path(f))}" for f in gone["folders_removed"])
    done(f"deleted run '{run}' ({gone['trials']} trials, {gone['steps']} steps{removed})")
    for folder in gone["folders_left"]:
        done(f"warning: could not remove all of {folder}: remove it by hand")


@runs_app.command("rename")
def runs_rename_cmd(
    old: RunArg, new: Annotated[str, typer.Argument(callback=valid_run)], force: Force = False, db: Db = None
) -> None:
    """Rename a run, in one transaction; a run made by `trialbook run` has its folders moved with it."""
    from trialbook.harness.run.paths import run_folders
    from trialbook.ledger.admin import rename_run
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db, create=False)  # writes: a read-only ledger is refused before anything is done
    config = ledger.get_run(old).config
    moved = rename_run(
        ledger,
        old,
        new,
        force=force,
        folders=list(zip(run_folders(config, old), run_folders(config, new), strict=True)),
    )
    done(f"renamed run '{old}' to '{new}'" + "".join(f", moved its folder to {_shown(f)}" for f in moved))


def _shown(path: Path) -> str:
    """A path under the working directory relative to it (as the user gave --runs-dir), else absolute."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


@app.command("show")
def show_cmd(
    run: RunArg, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None
) -> None:
    """One run: rate, judged count, outcomes, tags, per-repo rates, stack."""
    from trialbook.report import tables
    from trialbook.stats.run_summaries import run_summary

    emit(run_summary(summary_reading(db), run), as_json, tables.print_show, markdown, as_csv)


@app.command("export")
def export_cmd(
    run: RunArg,
    jsonl: Annotated[Path, typer.Option("--jsonl", help="Output file (the `import jsonl` format).")],
    db: Db = None,
) -> None:
    """Write a run's current trials as JSONL."""
    from trialbook.importers.jsonl import export_jsonl

    try:
        n = export_jsonl(reading(db), run, jsonl)
    except OSError as exc:
        raise UserError(f"cannot write {jsonl}: {exc.strerror}") from None
    done(f"exported {n} trials to {jsonl}")


Where = Annotated[str | None, typer.Option("--where", help="Only trials with this outcome, e.g. infra_error.")]


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _print_trials(data: object) -> None:
    from trialbook.report import layout

    trials = data.trials  # type: ignore[attr-defined]
    causes = any(t.cause for t in trials)  # the column only where some trial has one
    rows = [
        [str(t.id), t.task_id, str(t.attempt), t.outcome, "" if t.reward is None else f"{t.reward:g}",
         t.exception or "", "" if t.duration_s is None else f"{t.duration_s:.1f}", t.trial_name or ""]
        + ([_short(t.cause or "", 100)] if causes else [])
        for t in trials
    ]  # fmt: skip
    headers = ["id", "task", "attempt", "outcome", "reward", "exception", "seconds", "trial name"]
    headers += ["cause"] if causes else []
    layout.table(headers, rows, title=f"trials of run '{data.run}'")  # type: ignore[attr-defined]
    if data.folder:  # type: ignore[attr-defined]
        layout.line(f"trial folders: {_shown(Path(data.folder))}/<trial name>/", markup=False)  # type: ignore[attr-defined]
    layout.line("one trial's logs: `trialbook log ID --verifier` (or --agent, --patch)", markup=False)


@app.command("trials")
def trials_cmd(
    run: RunArg,
    where: Where = None,
    task: Annotated[str | None, typer.Option("--task", help="Only this task's trials.")] = None,
    as_json: Json = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    db: Db = None,
) -> None:
    """A run's current trials: id, task, attempt, outcome, reward, exception, trial name."""
    from trialbook.ledger.trial_reads import list_trials

    emit(list_trials(reading(db), run, where, task, _run_folder), as_json, _print_trials, markdown, as_csv)


def _run_folder(config: dict[str, Any], run: str) -> Path | None:
    """The run's trial folder (`<runs_dir>/<run>`) for a run the harness made, None for an imported one."""
    from trialbook.harness.run.paths import run_folders

    folders = run_folders(config, run)
    return folders[0] if folders else None


def _print_files(data: object) -> None:
    from trialbook.report import layout

    t = data.trial  # type: ignore[attr-defined]
    reward = "" if t.reward is None else f", reward {t.reward:g}"
    layout.line(f"trial {t.id} of run '{data.run}': {t.task_id} attempt {t.attempt}, {t.outcome}{reward}",  # type: ignore[attr-defined]
                markup=False)  # fmt: skip
    if t.folder:
        layout.line(f"folder: {t.folder}", markup=False)
    if data.exception_message:  # type: ignore[attr-defined]
        layout.line(f"cause: {t.exception}: {data.exception_message}", markup=False)  # type: ignore[attr-defined]
    if data.traceback:  # type: ignore[attr-defined]
        layout.line("traceback (kept as traceback.txt):", markup=False)
        layout.line(data.traceback.rstrip("\n"), markup=False)  # type: ignore[attr-defined]
    if not data.files:  # type: ignore[attr-defined]
        layout.line("the ledger keeps no log of this trial (its record and cause are above)", markup=False)
        return
    layout.table(["stored file", "characters"], [[f.name, str(f.chars)] for f in data.files])  # type: ignore[attr-defined]
    layout.line("print one: --verifier, --agent or --patch", markup=False)


@app.command("log")
def log_cmd(
    trial: Annotated[str, typer.Argument(help="A trial id (from `trialbook trials`) or trial name.")],
    verifier: Annotated[bool, typer.Option("--verifier", help="Print the verifier's output.")] = False,
    agent: Annotated[bool, typer.Option("--agent", help="Print the agent's log (or its trajectory).")] = False,
    patch: Annotated[bool, typer.Option("--patch", help="Print the agent's change as the verifier got it.")] = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """One trial's stored files (no option), or one of them printed as stored."""
    import sys

    from trialbook.ledger.trial_reads import trial_files, trial_log

    kinds = [k for k, on in (("verifier", verifier), ("agent", agent), ("patch", patch)) if on]
    if len(kinds) > 1:
        raise UserError("give one of --verifier, --agent, --patch")
    ledger = reading(db)
    if not kinds:
        emit(trial_files(ledger, trial, _run_folder), as_json, _print_files)
        return
    text = trial_log(ledger, trial, kinds[0])
    sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")


ledger_app = typer.Typer(help="The ledger itself: check that it is whole.", no_args_is_help=True)
app.add_typer(ledger_app, name="ledger")


@ledger_app.command("check")
def ledger_check_cmd(as_json: Json = False, db: Db = None) -> None:
    """Integrity check: orphans, duplicated or half-written trials, JSON that does not parse, stale summaries
    (one line per problem on stdout, exit 1)."""
    import json

    from trialbook.errors import TrialbookError
    from trialbook.ledger.integrity import check

    res = check(reading(db))
    if as_json:
        typer.echo(json.dumps({"runs": res.runs, "trials": res.trials, "problems": res.problems,
                               "more_problems": res.hidden}))  # fmt: skip
    else:
        for line in res.problems:
            typer.echo(line)
    if not res.ok:
        more = f" ({res.hidden} more not listed)" if res.hidden else ""
        raise TrialbookError(f"ledger check: {len(res.problems) + res.hidden} problem(s){more}")
    done(f"ledger OK: {res.runs} run(s), {res.trials} trial(s) checked")

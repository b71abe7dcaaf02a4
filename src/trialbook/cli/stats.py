"""Statistics commands: compare, plan, prereg init / prereg check."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, app, done, emit, finite, reading
from trialbook.errors import UserError

# The ledger (SQLAlchemy), numpy/scipy and rich are imported inside the commands: `--help` and
# every other command stay fast.

MinDiff = Annotated[float, typer.Option("--min-diff", help="Smallest gain (pp) worth claiming.", callback=finite)]
Metric = Annotated[
    str, typer.Option("--metric", help="resolved (reward 1.0 counts 1, else 0) or reward (mean reward).")
]


@app.command("compare")
def compare_cmd(
    base: Annotated[str, typer.Argument(help="Baseline run.")],
    candidates: Annotated[list[str], typer.Argument(help="One or more candidate runs.")],
    exclude_repo: Annotated[
        list[str] | None, typer.Option("--exclude-repo", help="Drop a repo's tasks (repeatable).")
    ] = None,
    split: Annotated[Path | None, typer.Option("--split", help="Task list: adds in/out rows.")] = None,
    min_diff: MinDiff = 4.0,
    picked_from: Annotated[
        int | None, typer.Option("--picked-from", help="The candidate was picked among this many.")
    ] = None,
    by_repo: Annotated[bool, typer.Option("--by-repo", help="Per-repo breakdown.")] = False,
    bootstrap: Annotated[bool, typer.Option("--bootstrap", help="Add a 10,000-resample task bootstrap CI.")] = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    metric: Metric = "resolved",
    exclude_tasks: Annotated[
        Path | None, typer.Option("--exclude-tasks", help="Task list: drop these tasks from every run.")
    ] = None,
    list_: Annotated[
        str | None, typer.Option("--list", help="wins or losses: print those task ids (one a line).")
    ] = None,
    export: Annotated[
        str | None,
        typer.Option("--export", help="Also send the paired table to wandb (offline, under --out) or mlflow."),
    ] = None,
    export_out: Annotated[
        Path | None, typer.Option("--out", help="--export wandb: where the offline run goes [env WANDB_DIR].")
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when no candidate claims (gate a CI job on the verdict).")
    ] = False,
    family: Annotated[
        str | None,
        typer.Option(
            "--family",
            help="Family of looks (default: the baseline's content); 'none': the comparison alone. See"
            " docs/statistics.md.",
        ),
    ] = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Paired comparison of candidates against a baseline over tasks graded in both."""
    from trialbook.report import compare as render
    from trialbook.stats.compare import compare

    if list_ not in (None, "wins", "losses"):
        raise UserError(f"--list must be wins or losses, not {list_!r}")
    if export_out is not None and export != "wandb":
        raise UserError("--out goes with --export wandb")
    if export:
        from trialbook.training.export import check_target, wandb_dir

        check_target(export)
        if export == "wandb":
            wandb_dir(export_out)
    from trialbook.stats import looks

    ledger = reading(db)

    def run(shares: dict[str, float] | None) -> Any:
        return compare(
            ledger, base, candidates, exclude_repo or [], split, min_diff, picked_from, by_repo, bootstrap,
            metric=metric, exclude_task_file=exclude_tasks, shares=shares,
        )  # fmt: skip

    res = looks.apply(ledger, run(None), family, run)
    if list_:
        res = replace(res, listed=list_)
    if export:
        from trialbook.training.export import export_compare

        export_compare(res, export, export_out)
    if markdown and not as_json and not as_csv:
        sys.stdout.write(render.markdown_compare(res))
    else:
        emit(res, as_json, render.print_compare, markdown, as_csv)
    if check:
        _gate(any(r.claim for r in res.comparisons if r.subset == "all"), "no candidate claims")


def _gate(passed: bool, why: str) -> None:
    """--check / prereg check: exit 1 (after the output) when the verdict is no claim."""
    if not passed:
        typer.echo(f"check failed: {why}", err=True)
        raise typer.Exit(1)


@app.command("plan")
def plan_cmd(
    effect: Annotated[float, typer.Option("--effect", help="True gain to detect (pp).", callback=finite)],
    tasks: Annotated[
        int | None, typer.Option("--tasks", help="Number of tasks (omitted: how many give 80% power).")
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--attempts", help="Attempts per task, K (omitted: the fewest that suffice).")
    ] = None,
    from_run: Annotated[str | None, typer.Option("--from-run", help="Estimate variances from this run.")] = None,
    vs: Annotated[str | None, typer.Option("--vs", help="Second run: estimate per-task differences too.")] = None,
    base_rate: Annotated[
        float, typer.Option("--base-rate", help="Resolved % assumed when no run is given.", callback=finite)
    ] = 50.0,
    min_diff: MinDiff = 4.0,
    metric: Metric = "resolved",
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Half-width, minimum detectable effect and tasks needed, for K = 1, 2, 4, 8, 16."""
    from trialbook.report import compare as render
    from trialbook.stats.power import plan

    ledger = reading(db) if from_run else None
    res = plan(ledger, tasks, repeats, effect, from_run, vs, base_rate, min_diff, metric)
    emit(res, as_json, render.print_plan, markdown, as_csv)


prereg_app = typer.Typer(help="Preregister a held-out confirmation and check runs against it.", no_args_is_help=True)
app.add_typer(prereg_app, name="prereg")


@prereg_app.command("init")
def prereg_init_cmd(
    pool: Annotated[Path, typer.Option("--pool", help="Task list of the pool.")],
    train: Annotated[int, typer.Option("--train", help="Tasks for development.")],
    holdout: Annotated[int, typer.Option("--holdout", help="Held-out tasks for the confirmation.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of the split.")],
    out: Annotated[Path, typer.Option("--out", help="Plan file (YAML) to write.")],
    holdout_repeats: Annotated[int, typer.Option("--holdout-attempts", help="Attempts per held-out task.")] = 1,
    min_diff: MinDiff = 4.0,
    candidates: Annotated[int, typer.Option("--candidates", help="Most candidates to be confirmed.")] = 1,
    metric: Metric = "resolved",
    ungraded: Annotated[
        str, typer.Option("--ungraded", help="dropped (from task means) or as_failures: the preregistered rule.")
    ] = "dropped",
    db: Db = None,
) -> None:
    """Split a pool into train and held-out tasks and fix the decision rule; records the plan in the ledger."""
    from trialbook.ledger.store import Ledger
    from trialbook.prereg.plan import init_plan

    plan_ = init_plan(Ledger(db), pool, train, holdout, seed, holdout_repeats, min_diff, candidates, out, metric,
                      ungraded)  # fmt: skip
    done(f"wrote {out}: {train} train + {holdout} held-out tasks, hash {plan_['hash'].removeprefix('sha256:')[:12]}")


@prereg_app.command("check")
def prereg_check_cmd(
    plan_file: Annotated[Path, typer.Argument(help="The plan YAML from `prereg init`.")],
    base: Annotated[str, typer.Option("--base", help="Baseline run.")],
    cand: Annotated[list[str], typer.Option("--cand", help="Candidate run (repeatable).")],
    as_json: Json = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    db: Db = None,
) -> None:
    """The preregistered verdict on held-out tasks (the in-pool result is shown as secondary); exit 1 when no
    candidate's claim holds."""
    from trialbook.prereg.plan import check_plan
    from trialbook.report import compare as render

    res = check_plan(reading(db), plan_file, base, cand)
    emit(res, as_json, render.print_prereg_check, markdown, as_csv)
    _gate(any(res.verdict.values()), "no candidate's preregistered claim holds")

"""Statistics commands: compare, plan, prereg init / prereg check."""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, app, done, emit, finite, reading
from trialbook.cli.groups import OUTPUT, Group, Output, grouped
from trialbook.errors import UserError
from trialbook.stats.comparison import CompareRequest, PlanRequest, PreregSpec

# The ledger (SQLAlchemy), numpy/scipy and rich are imported inside the commands: `--help` and
# every other command stay fast.

MinDiff = Annotated[float, typer.Option("--min-diff", help="Smallest gain (pp) worth claiming.", callback=finite)]
Metric = Annotated[
    str, typer.Option("--metric", help="resolved (reward 1.0 counts 1, else 0) or reward (mean reward).")
]


def _compare_group() -> Group:
    """The comparison's options, as a CompareRequest."""
    return Group(
        CompareRequest,
        defaults={"exclude": None},
        omit=("shares",),
        base=Annotated[str, typer.Argument(help="Baseline run.")],
        candidates=Annotated[list[str], typer.Argument(help="One or more candidate runs.")],
        exclude=Annotated[list[str] | None, typer.Option("--exclude-repo", help="Drop a repo's tasks (repeatable).")],
        split=Annotated[Path | None, typer.Option("--split", help="Task list: adds in/out rows.")],
        min_diff=MinDiff,
        picked_from=Annotated[
            int | None, typer.Option("--picked-from", help="The candidate was picked among this many.")
        ],
        by_repo=Annotated[bool, typer.Option("--by-repo", help="Per-repo breakdown.")],
        bootstrap=Annotated[bool, typer.Option("--bootstrap", help="Add a 10,000-resample task bootstrap CI.")],
        metric=Metric,
        exclude_task_file=Annotated[
            Path | None, typer.Option("--exclude-tasks", help="Task list: drop these tasks from every run.")
        ],
    )


@dataclass
class CompareOutput:
    """What `compare` does with its result besides printing it."""

    list_: Annotated[str | None, typer.Option("--list", help="wins or losses: print those task ids (one a line).")] = (
        None
    )
    export: Annotated[
        str | None,
        typer.Option("--export", help="Also send the paired table to wandb (offline, under --out) or mlflow."),
    ] = None
    export_out: Annotated[
        Path | None, typer.Option("--out", help="--export wandb: where the offline run goes [env WANDB_DIR].")
    ] = None
    check: Annotated[
        bool, typer.Option("--check", help="Exit 1 when no candidate claims (gate a CI job on the verdict).")
    ] = False


@app.command("compare")
@grouped(request=_compare_group(), then=Group(CompareOutput), output=OUTPUT)
def compare_cmd(
    request: CompareRequest,
    then: CompareOutput,
    output: Output,
    family: Annotated[
        str | None,
        typer.Option(
            "--family",
            help="Family of looks (default: the baseline's content); 'none': the comparison alone. See"
            " docs/statistics.md.",
        ),
    ] = None,
    db: Db = None,
) -> None:
    """Paired comparison of candidates against a baseline over tasks graded in both."""
    from trialbook.report import compare as render
    from trialbook.stats.compare import compare

    if then.list_ not in (None, "wins", "losses"):
        raise UserError(f"--list must be wins or losses, not {then.list_!r}")
    if then.export_out is not None and then.export != "wandb":
        raise UserError("--out goes with --export wandb")
    if then.export:
        from trialbook.training.export import check_target, wandb_dir

        check_target(then.export)
        if then.export == "wandb":
            wandb_dir(then.export_out)
    from trialbook.stats import looks

    ledger = reading(db)
    request = replace(request, exclude=request.exclude or [])

    def run(shares: dict[str, float] | None) -> Any:
        return compare(ledger, replace(request, shares=shares))

    res = looks.apply(ledger, run(None), family, run)
    if then.list_:
        res = replace(res, listed=then.list_)
    if then.export:
        from trialbook.training.export import export_compare

        export_compare(res, then.export, then.export_out)
    if output.markdown and not output.as_json and not output.as_csv:
        sys.stdout.write(render.markdown_compare(res))
    else:
        output.emit(res, render.print_compare)
    if then.check:
        _gate(any(r.claim for r in res.comparisons if r.subset == "all"), "no candidate claims")


def _gate(passed: bool, why: str) -> None:
    """--check / prereg check: exit 1 (after the output) when the verdict is no claim."""
    if not passed:
        typer.echo(f"check failed: {why}", err=True)
        raise typer.Exit(1)


def _plan_group() -> Group:
    """The plan's options, as a PlanRequest."""
    return Group(
        PlanRequest,
        defaults={"tasks": None, "repeats": None},
        effect=Annotated[float, typer.Option("--effect", help="True gain to detect (pp).", callback=finite)],
        tasks=Annotated[
            int | None, typer.Option("--tasks", help="Number of tasks (omitted: how many give 80% power).")
        ],
        repeats=Annotated[
            int | None, typer.Option("--attempts", help="Attempts per task, K (omitted: the fewest that suffice).")
        ],
        from_run=Annotated[str | None, typer.Option("--from-run", help="Estimate variances from this run.")],
        vs=Annotated[str | None, typer.Option("--vs", help="Second run: estimate per-task differences too.")],
        base_rate=Annotated[
            float, typer.Option("--base-rate", help="Resolved % assumed when no run is given.", callback=finite)
        ],
        min_diff=MinDiff,
        metric=Metric,
    )


@app.command("plan")
@grouped(request=_plan_group(), output=OUTPUT)
def plan_cmd(request: PlanRequest, output: Output, db: Db = None) -> None:
    """Half-width, minimum detectable effect and tasks needed, for K = 1, 2, 4, 8, 16."""
    from trialbook.report import compare as render
    from trialbook.stats.power import plan

    ledger = reading(db) if request.from_run else None
    output.emit(plan(ledger, request), render.print_plan)


prereg_app = typer.Typer(help="Preregister a held-out confirmation and check runs against it.", no_args_is_help=True)
app.add_typer(prereg_app, name="prereg")


PREREG = Group(
    PreregSpec,
    pool_file=Annotated[Path, typer.Option("--pool", help="Task list of the pool.")],
    train=Annotated[int, typer.Option("--train", help="Tasks for development.")],
    holdout=Annotated[int, typer.Option("--holdout", help="Held-out tasks for the confirmation.")],
    seed=Annotated[int, typer.Option("--seed", help="Seed of the split.")],
    holdout_repeats=Annotated[int, typer.Option("--holdout-attempts", help="Attempts per held-out task.")],
    min_diff=MinDiff,
    max_candidates=Annotated[int, typer.Option("--candidates", help="Most candidates to be confirmed.")],
    metric=Metric,
    ungraded=Annotated[
        str, typer.Option("--ungraded", help="dropped (from task means) or as_failures: the preregistered rule.")
    ],
)


@prereg_app.command("init")
@grouped(spec=PREREG)
def prereg_init_cmd(
    spec: PreregSpec,
    out: Annotated[Path, typer.Option("--out", help="Plan file (YAML) to write.")],
    db: Db = None,
) -> None:
    """Split a pool into train and held-out tasks and fix the decision rule; records the plan in the ledger."""
    from trialbook.ledger.store import Ledger
    from trialbook.prereg.plan import init_plan

    plan_ = init_plan(Ledger(db), spec, out)
    done(
        f"wrote {out}: {spec.train} train + {spec.holdout} held-out tasks, "
        f"hash {plan_['hash'].removeprefix('sha256:')[:12]}"
    )


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

"""Training commands: `train report`, `sim pipeline`, `sim rollouts` (`import steps` is with the imports)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, RunArg, app, emit, reading
from trialbook.cli.stats import Metric
from trialbook.errors import UserError
from trialbook.report import training as render
from trialbook.training.analysis import train_report
from trialbook.training.load import load_durations
from trialbook.training.sim_pipeline import PipelineConfig, empirical_sampler, lognormal_sampler, simulate
from trialbook.training.sim_rollouts import RolloutConfig, generate

train_app = typer.Typer(help="Training-run analytics.", no_args_is_help=True)
sim_app = typer.Typer(help="Simulators: the async RL pipeline and synthetic training logs.", no_args_is_help=True)
app.add_typer(train_app, name="train")
app.add_typer(sim_app, name="sim")


@train_app.command("report")
def train_report_cmd(
    run: RunArg,
    bucket: Annotated[int, typer.Option("--bucket", help="Weight versions per bucket.")] = 5,
    exclude_repo: Annotated[list[str] | None, typer.Option("--exclude-repo", help="Drop a repo (repeatable).")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs of the run, to price stalls.")] = None,
    eval_set: Annotated[
        str | None, typer.Option("--eval-set", help="Evaluation task list (file or run name) to check overlap.")
    ] = None,
    markdown: Markdown = False,
    as_csv: Csv = False,
    metric: Metric = "resolved",
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Pass rate (or mean reward) by weight-version bucket and by pass, same-task encounters, stalls."""
    report = train_report(
        reading(db), run, bucket=bucket, exclude_repos=exclude_repo or [], gpus=gpus, eval_set=eval_set,
        metric=metric,
    )  # fmt: skip
    emit(report, as_json, render.print_train_report, markdown, as_csv)


@train_app.command("export-trajectories")
def export_trajectories_cmd(
    run: RunArg,
    out: Annotated[Path, typer.Option("--out", help="File to write (.jsonl, or .parquet with pyarrow).")],
    fmt: Annotated[str | None, typer.Option("--format", help="jsonl or parquet (default: by --out's suffix).")] = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Token-level trajectories for a trainer: per trial, sequences of ids, loss mask, logprobs, weight versions."""
    from trialbook.training.trajectories import export

    def human(s: dict) -> None:
        typer.echo(f"wrote {s['trajectories']} trajectories ({s['sequences']} sequences, "
                   f"{s['policy_tokens']} policy tokens) to {s['out']}")  # fmt: skip

    emit(export(reading(db), run, out, fmt), as_json, human)


@sim_app.command("pipeline")
def sim_pipeline_cmd(
    batch: Annotated[int, typer.Option("--batch", help="Groups (tasks) per optimizer step.")],
    group: Annotated[int, typer.Option("--group", help="Trajectories per group.")],
    staleness: Annotated[int, typer.Option("--staleness", help="Max weight versions a trajectory may lag.")],
    pool: Annotated[int, typer.Option("--pool", help="Tasks in the training pool.")],
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the pool.")],
    train_step_s: Annotated[float, typer.Option("--train-step-s", help="Seconds per optimizer step.")],
    workers: Annotated[int, typer.Option("--workers", help="Concurrent trajectories.")],
    durations_from: Annotated[
        str | None, typer.Option("--durations-from", help="Resample trajectory durations of this run.")
    ] = None,
    duration_dist: Annotated[
        str | None, typer.Option("--duration-dist", help="lognormal:MU,SIGMA of log seconds.")
    ] = None,
    cross_epoch: Annotated[bool, typer.Option("--cross-epoch", help="Keep sampling into the next epoch.")] = False,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Simulate asynchronous RL: trainer idle time and epoch-boundary stalls."""
    if (durations_from is None) == (duration_dist is None):
        raise UserError("give exactly one of --durations-from RUN or --duration-dist lognormal:MU,SIGMA")
    if duration_dist is not None:
        sampler = lognormal_sampler(duration_dist)
    else:
        ledger = reading(db)
        sampler = empirical_sampler(load_durations(ledger, ledger.get_run(durations_from).id))
    cfg = PipelineConfig(batch, group, staleness, pool, epochs, train_step_s, workers, cross_epoch, seed)
    emit(simulate(cfg, sampler), as_json, render.print_pipeline, markdown, as_csv)


@sim_app.command("rollouts")
def sim_rollouts_cmd(
    out: Annotated[Path, typer.Option("--out", help="Trajectories JSONL to write (`import jsonl --kind train`).")],
    steps_out: Annotated[
        Path | None, typer.Option("--steps-out", help="Steps JSONL to write (`import steps`).")
    ] = None,
    pool: Annotated[int, typer.Option("--pool")] = 250,
    group: Annotated[int, typer.Option("--group")] = 8,
    batch: Annotated[int, typer.Option("--batch")] = 16,
    staleness: Annotated[int, typer.Option("--staleness")] = 3,
    epochs: Annotated[int, typer.Option("--epochs")] = 4,
    gain: Annotated[float, typer.Option("--gain", help="Logit gain per re-encounter of a task.")] = 0.1,
    incomplete: Annotated[int, typer.Option("--incomplete", help="Trajectories cut off at the end.")] = 128,
    step_s: Annotated[float, typer.Option("--step-s", help="Typical step time.")] = 600.0,
    stall_s: Annotated[float, typer.Option("--stall-s", help="Wait of the first step of each new epoch.")] = 4500.0,
    cross_epoch: Annotated[bool, typer.Option("--cross-epoch", help="No epoch reset (no stall).")] = False,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    as_json: Json = False,
) -> None:
    """Write a synthetic training log with known ground truth; prints the truth."""
    cfg = RolloutConfig(
        pool=pool, group=group, batch=batch, staleness=staleness, epochs=epochs, gain=gain, incomplete=incomplete,
        step_s=step_s, stall_s=stall_s, cross_epoch=cross_epoch, seed=seed,
    )  # fmt: skip
    emit(generate(cfg, out, steps_out), as_json, render.print_truth)

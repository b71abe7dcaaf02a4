"""Training commands: `train report`, `sim pipeline`, `sim rollouts` (`import steps` is with the imports)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, RunArg, app, emit, finite, reading
from trialbook.cli.groups import Group, grouped
from trialbook.cli.stats import Metric
from trialbook.errors import TrialbookError, UserError
from trialbook.report import training as render
from trialbook.training.analysis import train_report
from trialbook.training.load import load_durations
from trialbook.training.sim_pipeline import PipelineConfig, empirical_sampler, lognormal_sampler, simulate
from trialbook.training.sim_rollouts import RolloutConfig, generate

if TYPE_CHECKING:  # the commands import what they run when they run
    from trialbook.training.alerts import Alert

train_app = typer.Typer(help="Training-run analytics.", no_args_is_help=True)
sim_app = typer.Typer(help="Simulators: the async RL pipeline and synthetic training logs.", no_args_is_help=True)
app.add_typer(train_app, name="train")
app.add_typer(sim_app, name="sim")


@dataclass
class ReportView:
    """What `train report` shows: buckets, repos dropped, GPUs priced, the eval set, the metric."""

    bucket: Annotated[int, typer.Option("--bucket", help="Weight versions per bucket.")] = 5
    exclude_repo: Annotated[list[str] | None, typer.Option("--exclude-repo", help="Drop a repo (repeatable).")] = None
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs of the run, to price stalls.")] = None
    eval_set: Annotated[
        str | None, typer.Option("--eval-set", help="Evaluation task list (file or run name) to check overlap.")
    ] = None
    metric: Metric = "resolved"


@train_app.command("report")
@grouped(view=Group(ReportView))
def train_report_cmd(
    run: RunArg,
    view: ReportView,
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Pass rate (or mean reward) by weight-version bucket and by pass, same-task encounters, stalls."""
    report = train_report(
        reading(db),
        run,
        bucket=view.bucket,
        exclude_repos=view.exclude_repo or [],
        gpus=view.gpus,
        eval_set=view.eval_set,
        metric=view.metric,
    )
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

    def human(s: dict[str, Any]) -> None:
        typer.echo(f"wrote {s['trajectories']} trajectories ({s['sequences']} sequences, "
                   f"{s['policy_tokens']} policy tokens) to {s['out']}")  # fmt: skip

    emit(export(reading(db), run, out, fmt), as_json, human)


@dataclass
class PipelineSim:
    """The pipeline simulated: its batches, groups, staleness, pool, workers and trajectory durations."""

    batch: Annotated[int, typer.Option("--batch", help="Groups (tasks) per optimizer step.")]
    group: Annotated[int, typer.Option("--group", help="Trajectories per group.")]
    staleness: Annotated[int, typer.Option("--staleness", help="Max weight versions a trajectory may lag.")]
    pool: Annotated[int, typer.Option("--tasks", help="Tasks in the training pool.")]
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the pool.")]
    train_step_s: Annotated[float, typer.Option("--train-step-s", help="Seconds per optimizer step.", callback=finite)]
    workers: Annotated[int, typer.Option("--workers", help="Concurrent trajectories.")]
    durations_from: Annotated[
        str | None, typer.Option("--durations-from", help="Resample trajectory durations of this run.")
    ] = None
    duration_dist: Annotated[str | None, typer.Option("--duration-dist", help="lognormal:MU,SIGMA of log seconds.")] = (
        None
    )
    cross_epoch: Annotated[bool, typer.Option("--cross-epoch", help="Keep sampling into the next epoch.")] = False
    seed: Annotated[int, typer.Option("--seed")] = 0


@sim_app.command("pipeline")
@grouped(pipe=Group(PipelineSim))
def sim_pipeline_cmd(
    pipe: PipelineSim,
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Simulate asynchronous RL: trainer idle time and epoch-boundary stalls."""
    if (pipe.durations_from is None) == (pipe.duration_dist is None):
        raise UserError("give exactly one of --durations-from RUN or --duration-dist lognormal:MU,SIGMA")
    if pipe.duration_dist is not None:
        sampler = lognormal_sampler(pipe.duration_dist)
    else:
        ledger = reading(db)
        sampler = empirical_sampler(load_durations(ledger, ledger.get_run(pipe.durations_from).id))
    cfg = PipelineConfig(
        pipe.batch,
        pipe.group,
        pipe.staleness,
        pipe.pool,
        pipe.epochs,
        pipe.train_step_s,
        pipe.workers,
        pipe.cross_epoch,
        pipe.seed,
    )
    emit(simulate(cfg, sampler), as_json, render.print_pipeline, markdown, as_csv)


@dataclass
class RolloutSim:
    """The rollouts simulated: pool, group, batch, staleness, epochs, gain, cut-offs and step times."""

    pool: Annotated[int, typer.Option("--tasks", help="Tasks in the training pool.")] = 250
    group: Annotated[int, typer.Option("--group")] = 8
    batch: Annotated[int, typer.Option("--batch")] = 16
    staleness: Annotated[int, typer.Option("--staleness")] = 3
    epochs: Annotated[int, typer.Option("--epochs")] = 4
    gain: Annotated[float, typer.Option("--gain", help="Logit gain per re-encounter of a task.", callback=finite)] = 0.1
    incomplete: Annotated[int, typer.Option("--incomplete", help="Trajectories cut off at the end.")] = 128
    step_s: Annotated[
        float, typer.Option("--train-step-s", help="Typical seconds per optimizer step.", callback=finite)
    ] = 600.0
    stall_s: Annotated[
        float, typer.Option("--stall-s", help="Wait of the first step of each new epoch.", callback=finite)
    ] = 4500.0
    cross_epoch: Annotated[bool, typer.Option("--cross-epoch", help="No epoch reset (no stall).")] = False
    seed: Annotated[int, typer.Option("--seed")] = 0


@sim_app.command("rollouts")
@grouped(sim=Group(RolloutSim))
def sim_rollouts_cmd(
    out: Annotated[Path, typer.Option("--out", help="Trajectories JSONL to write (`import jsonl --kind train`).")],
    sim: RolloutSim,
    steps_out: Annotated[
        Path | None, typer.Option("--steps-out", help="Steps JSONL to write (`import steps`).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Write a synthetic training log with known ground truth; prints the truth."""
    cfg = RolloutConfig(
        pool=sim.pool,
        group=sim.group,
        batch=sim.batch,
        staleness=sim.staleness,
        epochs=sim.epochs,
        gain=sim.gain,
        incomplete=sim.incomplete,
        step_s=sim.step_s,
        stall_s=sim.stall_s,
        cross_epoch=sim.cross_epoch,
        seed=sim.seed,
    )
    emit(generate(cfg, out, steps_out), as_json, render.print_truth)


@train_app.command("alerts")
def train_alerts_cmd(as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False) -> None:
    """The alert rules `train watch` and the live page apply (one table)."""
    from trialbook.report.live import print_alert_rules
    from trialbook.training.alerts import rule_rows

    emit(rule_rows(), as_json, print_alert_rules, markdown, as_csv)


@dataclass
class WatchFlags:
    """How `train watch` watches: how often, until what, and the thresholds of its alerts."""

    interval: Annotated[float, typer.Option("--interval", help="Seconds between refreshes.", callback=finite)] = 5.0
    once: Annotated[bool, typer.Option("--once", help="One snapshot with its alerts, then exit.")] = False
    until: Annotated[str | None, typer.Option("--until", help="Exit once this alert fires (see `train alerts`).")] = (
        None
    )
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", help="Stop after this many seconds (exit 1 if --until never fired).", callback=finite
        ),
    ] = None
    webhook: Annotated[str | None, typer.Option("--webhook", help="POST each alert as JSON to this URL.")] = None
    bucket: Annotated[int, typer.Option("--bucket", help="Weight versions per signature bucket.")] = 5
    max_staleness: Annotated[
        int | None, typer.Option("--staleness", help="Staleness bound [default: the run config's 'staleness'].")
    ] = None
    infra_error_pct: Annotated[
        float, typer.Option("--infra-error-pct", help="Alert above this infra-error share.", callback=finite)
    ] = 5.0
    gpus: Annotated[int | None, typer.Option("--gpus", help="GPUs of the run, to price a drain.")] = None


@train_app.command("watch")
@grouped(flags=Group(WatchFlags))
def train_watch_cmd(
    run: RunArg,
    flags: WatchFlags,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Watch a training run while it runs: steps and the stall rule, staleness, outcomes, signatures, alerts."""
    import json
    import sys

    from trialbook.report import layout
    from trialbook.report.live import alert_line, print_state, step_line
    from trialbook.result_types import to_json
    from trialbook.training.alerts import Thresholds
    from trialbook.training.watch import Watcher, watch_training

    if as_json and not (flags.once or flags.until or flags.timeout):
        raise UserError("--json needs --once, --until or --timeout (it prints one object at the end)")
    w = Watcher(reading(db), run, bucket=flags.bucket, max_staleness=flags.max_staleness, webhook=flags.webhook,
                thresholds=Thresholds(infra_error_pct=flags.infra_error_pct, gpus=flags.gpus))  # fmt: skip
    tty = sys.stdout.isatty() and not as_json
    shown = {"step": None, "errors": 0}

    def show(w: Watcher, new: list[Alert]) -> None:
        s = w.state
        assert s is not None
        for problem in w.webhook_errors[shown["errors"] :]:
            typer.echo(f"warning: {problem}", err=True)
        shown["errors"] = len(w.webhook_errors)
        if as_json:
            return
        with layout.output("rich"):
            if tty:
                layout.console().clear()
                print_state(s, w.raised)
                return
            if shown["step"] is None:
                print_state(s, new)
            else:
                for sw in s.waits:
                    if sw.step > shown["step"]:
                        layout.line(step_line(sw), markup=False)
                for a in new:
                    layout.line(alert_line(a), markup=False)
        shown["step"] = s.current_step if s.current_step is not None else -1
        sys.stdout.flush()

    ok = watch_training(w, flags.interval, show, once=flags.once, until=flags.until, timeout=flags.timeout)
    if as_json:
        out = {"state": to_json(w.state), "alerts": to_json(w.raised)}
        sys.stdout.write(json.dumps(out, indent=2, default=str) + "\n")
    if not ok:
        raise TrialbookError(f"--until {flags.until}: not raised within {flags.timeout:g} s")


@sim_app.command("replay")
def sim_replay_cmd(
    trajectories: Annotated[Path, typer.Argument(help="Trajectories JSONL (`sim rollouts --out`).")],
    steps: Annotated[Path, typer.Argument(help="Steps JSONL (`sim rollouts --steps-out`).")],
    run: Annotated[str, typer.Option("--run", help="The new run to write.")],
    speed: Annotated[
        float, typer.Option("--speed", help="Log seconds per wall-clock second.", callback=finite)
    ] = 1000.0,
    staleness: Annotated[
        int | None, typer.Option("--staleness", help="Store this staleness bound in the run's config.")
    ] = None,
    db: Db = None,
) -> None:
    """Write a training log into the ledger step by step in scaled real time (for `train watch` and the live page)."""
    from trialbook.cli.common import done
    from trialbook.importers.replay import replay
    from trialbook.ledger.store import Ledger

    config = {} if staleness is None else {"staleness": staleness}
    n = replay(Ledger(db), trajectories, steps, run, speed=speed, config=config)
    done(f"replayed {n} steps into run '{run}'")


@train_app.command("selection")
def train_selection_cmd(
    run: RunArg,
    top: Annotated[int, typer.Option("--top", help="Tasks listed, most dropped first.")] = 20,
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Selection bias: generated vs trained rollouts by task and by duration (which never reached a batch)."""
    from trialbook.report.live import print_selection
    from trialbook.training.batch_selection import selection_report

    emit(selection_report(reading(db), run, top=top), as_json, print_selection, markdown, as_csv)


@train_app.command("export")
def train_export_cmd(
    run: RunArg,
    to: Annotated[str, typer.Option("--to", help="wandb or mlflow.")],
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="W&B: where the offline run goes [env WANDB_DIR].")
    ] = None,
    tracking_uri: Annotated[
        str | None, typer.Option("--tracking-uri", help="MLflow server [env MLFLOW_TRACKING_URI].")
    ] = None,
    project: Annotated[str, typer.Option("--project", help="W&B project / MLflow experiment.")] = "trialbook",
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Send a train run's per-step metrics, waits, staleness and alerts to W&B (offline) or MLflow."""
    from trialbook.cli.common import done
    from trialbook.training import export

    export.check_target(to)
    if out_dir is not None and to != "wandb":
        raise UserError("--out goes with --to wandb")
    where = export.wandb_dir(out_dir) if to == "wandb" else None
    ledger = reading(db)
    if where is not None:
        res = export.train_to_wandb(ledger, run, where, project)
    else:
        res = export.train_to_mlflow(ledger, run, tracking_uri, project)
    if as_json:
        emit(res, True, None)
    else:
        done(f"exported {res.steps} steps and {res.alerts} alerts of '{run}' to {res.target} run {res.run}"
             f" at {res.where}")  # fmt: skip

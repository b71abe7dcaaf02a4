"""Harness commands: run, resume, rerun, clean, policy, quickstart, validate, grade, reverify (thin)."""

from __future__ import annotations

import sys
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
    app,
    comma_list,
    done,
    emit,
    valid_run,
)
from trialbook.cli.groups import Group, grouped
from trialbook.cli.run_flags import (
    AGENT_FLAGS,
    GRADE_FLAGS,
    RUN_FLAGS,
    WHERE,
    AgentFlags,
    BackendKind,
    ExecutorKind,
    GradeFlags,
    Multiplier,
    RayAddress,
    RunFlags,
    RunsDir,
    TaskIds,
)
from trialbook.errors import UserError
from trialbook.harness.placement.choice import Where, make_executor
from trialbook.harness.run.config import RunConfig, Tally
from trialbook.harness.run.lifecycle import clean, rerun, resume_run, start_run
from trialbook.harness.run.paths import run_folders
from trialbook.harness.workflows.quickstart import AgentTally, QuickstartResult, quickstart
from trialbook.harness.workflows.validate import ValidateOptions, ValidateResult, validate
from trialbook.ledger.store import Ledger
from trialbook.outcomes import PolicyRow, policy_rows
from trialbook.report import layout, tables
from trialbook.report.validate import print_validate
from trialbook.rewards import HACK_POLICIES
from trialbook.stats.run_summaries import run_summary
from trialbook.tasks import load_tasks
from trialbook.verify import gold


def _finish(ledger: Ledger, name: str, tally: Tally, as_json: bool) -> None:
    extra = " (stopped at --deadline; stragglers recorded incomplete)" if tally.deadline_hit else ""
    if tally.folder_warnings:
        extra += f"; {tally.folder_warnings} trial folder(s) not written (see each trial's extra.warnings)"
    if tally.folders_restored:
        extra += f"; {tally.folders_restored} trial folder(s) written again from the ledger"
    done(f"run '{name}': {tally.done} trials recorded, {tally.resolved} resolved, {tally.errors} errors{extra}")
    folders = run_folders(ledger.get_run(name).config, name)
    if folders:
        done(f"trial folders: {_shown(folders[0])}/ (`trialbook trials {name}` lists them)")
    emit(run_summary(ledger, name), as_json, tables.print_show)
    if tally.infra:  # the run is not whole: a script or CI job must not read it as done (docs/reference/output.md)
        done(f"error: {tally.infra} trial(s) ended infra_error (`trialbook trials {name} --where infra_error` "
             f"shows why; `trialbook rerun {name} --where infra_error` runs them again)")  # fmt: skip
        raise typer.Exit(1)


def _shown(path: Path) -> str:
    """A path under the working directory relative to it (as --runs-dir is usually given), else absolute."""
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


@app.command("run")
@grouped(agent=AGENT_FLAGS, settings=RUN_FLAGS, where=WHERE)
def run_cmd(
    tasks_dir: Path,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    agent: AgentFlags,
    settings: RunFlags,
    where: Where,
    replace: Replace = False,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Run an agent on every task in TASKS_DIR, each trial in its own Docker sandbox."""
    name = agent.name()
    if settings.hack_policy not in HACK_POLICIES:
        raise UserError(f"--hack-policy must be one of {', '.join(HACK_POLICIES)}, not '{settings.hack_policy}'")
    config = RunConfig(
        tasks_dir=str(tasks_dir),
        agent=name,
        attempts=settings.attempts,
        timeout_multiplier=settings.timeout_multiplier or 1.0,
        deadline_minutes=settings.deadline,
        retries=settings.retries,
        stop_after_errors=settings.stop_after_errors,
        progress_every_s=settings.progress_every,
        warm_pool=settings.warm_pool,
        runtime=settings.runtime,
        hack_policy=settings.hack_policy,
        tasks=comma_list(settings.tasks),
        runs_dir=str(settings.runs_dir.resolve()),
        agent_options=agent.options(name),
        **where.settings(),
    )
    ledger = Ledger(db)
    tally, errors = start_run(ledger, run, config, replace=replace, executor=make_executor(where))
    for err in errors:
        done(f"task {err.task_id}: {err.message} (recorded as infra_error)")
    _finish(ledger, run, tally, as_json)


def _stored_where(ledger: Ledger, run: str, executor: str, ray_address: str | None) -> Where:
    """Where a stored run ran (Where.of_run); an unknown run is left to the command's own check."""
    try:
        config = ledger.get_run(run).config
    except UserError:
        config = {}
    return Where.of_run(config, executor, ray_address)


@app.command("resume")
def resume_cmd(
    run: RunArg, executor: ExecutorKind = "local", ray_address: RayAddress = None, as_json: Json = False, db: Db = None
) -> None:
    """After a crash or kill -9: remove leftover containers, run exactly the trials with no record."""
    ledger = Ledger(db, create=False)  # a run to resume is in an existing ledger: a mistyped --db is an error
    tally, removed = resume_run(ledger, run, make_executor(_stored_where(ledger, run, executor, ray_address)))
    done(f"removed {removed} leftover container(s); {tally.total} trial(s) had no record")
    _finish(ledger, run, tally, as_json)


@app.command("rerun")
def rerun_cmd(
    run: RunArg,
    where: Annotated[str, typer.Option("--where", help="Outcome to re-run, e.g. agent_timeout.")],
    timeout_multiplier: Multiplier = None,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Re-run the trials with one outcome; each new trial supersedes the old (kept in history)."""
    ledger = Ledger(db, create=False)
    placed = make_executor(_stored_where(ledger, run, executor, ray_address))
    tally = rerun(ledger, run, where, timeout_multiplier, placed)
    _finish(ledger, run, tally, as_json)


@app.command("clean")
def clean_cmd(
    run: Annotated[str | None, typer.Option("--run", help="Only this run.", callback=valid_run)] = None,
    db: Annotated[
        str | None,
        typer.Option("--db", help="The ledger whose runs' containers go [env TRIALBOOK_DB; ./trialbook.db]."),
    ] = None,
    all_on_host: Annotated[
        bool,
        typer.Option("--all-on-host", help="Every trialbook-labelled container and image on the host, of any ledger."),
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask (asked when a terminal is attached).")] = False,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    backend: BackendKind = "docker",
) -> None:
    """Remove the containers (and images built for a run) that this ledger's runs started (on every node with ray)."""
    if all_on_host and db:
        raise UserError("--all-on-host removes every ledger's containers: give it without --db")
    where = make_executor(Where(executor, backend, ray_address=ray_address))
    try:
        ledger = None if all_on_host else Ledger(db, create=False, reads_only=True).id
    except UserError as exc:
        raise UserError(f"{exc}; --all-on-host cleans every ledger's containers") from None
    scope = ("every ledger's" if all_on_host else "this ledger's") + (f" run '{run}'" if run else " runs")
    if sys.stdin.isatty() and not yes:
        engine: Any = getattr(where, "engine", None)
        if hasattr(engine, "containers") and hasattr(engine, "images"):
            n_boxes, n_images = len(engine.containers(run, ledger)), len(engine.images(run, ledger))
            counts = f"{n_boxes} container(s) and {n_images} image(s)"
        else:  # on a cluster: counted node by node as they go
            counts = "the containers and images on every node"
        if not typer.confirm(f"remove {counts} of {scope}?", default=False, err=True):
            done("nothing removed")
            raise typer.Exit(1)
    containers, images = clean(run, ledger, where)
    done(f"removed {containers} container(s) and {images} image(s) of {scope}")


def _print_policy(rows: list[PolicyRow]) -> None:
    layout.table(
        ["exception", "outcome", "retry", "graded", "meaning"],
        [[r.exception, r.outcome, "yes" if r.retry else "no", "yes" if r.graded else "no", r.meaning] for r in rows],
        title="error policy",
    )


@app.command("policy")
def policy_cmd(as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False) -> None:
    """The error policy: exception type -> outcome, retried?, graded?"""
    emit(policy_rows(), as_json, _print_policy, markdown, as_csv)


def _print_quickstart(data: QuickstartResult) -> None:
    cand = data.agent
    none = AgentTally(0, 0, 0, {})
    rows = []
    for t in data.tasks:
        nop, oracle = t.agents.get("nop", none), t.agents.get(cand, none)
        rows.append([
            t.task_id, str(t.expected_oracle), f"{nop.resolved}/{nop.attempts}", f"{oracle.resolved}/{oracle.attempts}",
            ", ".join(f"{k} {v}" for k, v in oracle.outcomes.items()),
        ])  # fmt: skip
    headers = ["task", "expected (oracle)", "nop resolved", f"{cand} resolved", f"{cand} outcomes"]
    layout.table(headers, rows, title="quickstart")  # stacked, never cut, on a narrow terminal
    for agent, r in data.runs.items():
        layout.line(
            f"{agent:>6}: resolved {r.resolved}/{r.judged} judged = {tables.fmt_pct(r.resolved_pct)}"
            f"  (judged {r.judged}/{r.trials})",
            markup=False,
        )
    row = data.comparison
    if row:
        lo, hi = row.ci_pp
        layout.line(
            f"paired {cand} - nop over {row.tasks_paired} tasks graded in both: {row.diff_pp:+.1f} pp"
            f" (95% CI {lo:+.1f} to {hi:+.1f}), W/L/T {row.wins}/{row.losses}/{row.ties}",
            markup=False,
        )
    else:
        layout.line(f"no paired comparison: fewer than 2 tasks were graded in both {cand} and nop", markup=False)
    layout.line(f"next: `{data.next}` for the full paired comparison and its caveats", markup=False)


@app.command("quickstart")
def quickstart_cmd(
    tasks_dir: Annotated[Path | None, typer.Option("--tasks-dir", help="Default: examples/tasks.")] = None,
    attempts: Annotated[int, typer.Option("--attempts", min=1)] = 2,
    agent: Annotated[
        str, typer.Option("--agent", help="oracle, or mini (an LLM; a local model if no --endpoint).")
    ] = "oracle",
    endpoint: Annotated[list[str] | None, typer.Option("--endpoint", help="mini: OpenAI-compatible URL.")] = None,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """THE first command: run the example tasks with nop and oracle (or mini) in Docker and compare them."""
    where = make_executor(Where(executor, ray_address=ray_address))
    data = quickstart(Ledger(db), tasks_dir, attempts, agent=agent, endpoints=endpoint, executor=where)
    emit(data, as_json, _print_quickstart)


VALIDATE = Group(
    ValidateOptions,
    tasks_dir=Path,
    repeats=Annotated[int, typer.Option("--attempts", min=1, help="Trials per agent (oracle, nop) per task.")],
    timeout_multiplier=Multiplier,
    where=WHERE.but(concurrency=2),
    run=Annotated[
        str | None, typer.Option("--run", help="Run name (default validate-<dir>-<time>).", callback=valid_run)
    ],
    tasks=TaskIds,
    runs_dir=RunsDir,
    replace=Replace,
    leaks=Annotated[
        bool, typer.Option("--leaks", help="Also scan each task's image for its solution: verdict leaky (Docker).")
    ],
)


@app.command("validate")
@grouped(opts=VALIDATE)
def validate_cmd(
    opts: ValidateOptions,
    image_variant: Annotated[
        list[str] | None,
        typer.Option("--image-variant", help="LABEL=IMAGE: run under IMAGE (repeatable; LABEL= is the task's own)."),
    ] = None,
    markdown: Markdown = False,
    as_csv: Csv = False,
    as_json: Json = False,
    db: Db = None,
    write_gold: Annotated[
        bool,
        typer.Option("--write-gold", help="Write the gold statuses found (XFAIL...) to each task's tests/config.json."),
    ] = False,
) -> None:
    """Check tasks: oracle and nop N times each, one verdict per task (ok, flaky, oracle_fails, ...).

    Exits 1 when some task's verdict is not `ok` (a CI job can gate on it), after the report."""
    opts.tasks, opts.timeout_multiplier = comma_list(opts.tasks), opts.timeout_multiplier or 1.0
    result = validate(Ledger(db), opts, image_variant)
    emit(result, as_json, print_validate, markdown, as_csv)
    if write_gold:
        _write_gold(opts.tasks_dir, result)
    if any(task.verdict != "ok" for task in result.tasks):
        raise typer.Exit(1)


def _write_gold(tasks_dir: Path, result: ValidateResult) -> None:
    """validate --write-gold: the default image's gold statuses into each task's tests/config.json (verify/gold.py)."""
    found = {t.task_id: t.details["gold_statuses"] for t in result.tasks
             if (t.variant is None or t.image is None) and t.details.get("gold_statuses")}  # fmt: skip
    if not found:
        done("no gold status other than PASSED found: nothing written")
        return
    specs, _ = load_tasks(tasks_dir, sorted(found))
    for spec in specs:
        path = gold.write_gold(spec.path, found[spec.task_id])
        done(f"task {spec.task_id}: GOLD_STATUSES ({len(found[spec.task_id])} test(s)) written to {path}")
    done("validate again to check the tasks with them")


def _patch_run_done(ledger: Ledger, name: str, ran: object, as_json: bool) -> None:
    for err in ran.errors:  # type: ignore[attr-defined]
        done(f"task {err.task_id}: {err.message} (recorded as infra_error)")
    if ran.skipped:  # type: ignore[attr-defined]
        done(f"{ran.skipped} trial(s) kept no patch and were not graded again")  # type: ignore[attr-defined]
    _finish(ledger, name, ran.tally, as_json)  # type: ignore[attr-defined]


TasksDir = Annotated[Path, typer.Option("--tasks-dir", help="The task folders the patches are graded on.")]


@app.command("grade")
@grouped(where=WHERE, flags=GRADE_FLAGS)
def grade_cmd(
    predictions: Annotated[
        Path, typer.Argument(help="SWE-bench predictions: JSONL or JSON of instance_id, model_patch.")
    ],
    tasks_dir: TasksDir,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    where: Where,
    flags: GradeFlags,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Grade each prediction's patch in a fresh container of its task, by the task's verifier: one run."""
    from trialbook.harness.workflows.patches import grade_predictions

    ledger = Ledger(db)
    ran = grade_predictions(
        ledger, predictions, tasks_dir, run, where, replace=flags.replace, **flags.given()
    )  # fmt: skip
    _patch_run_done(ledger, run, ran, as_json)


@app.command("reverify")
@grouped(where=WHERE, flags=GRADE_FLAGS)
def reverify_cmd(
    old: RunArg,
    run: Annotated[str, typer.Option("--run", help="The new run's name.", callback=valid_run)],
    where: Where,
    flags: GradeFlags,
    tasks_dir: Annotated[
        Path | None, typer.Option("--tasks-dir", help="Task folders (default: the run's own; needed for imports).")
    ] = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Grade the patches a run's trials left again, under today's verifier, as a new run (same attempts)."""
    from trialbook.harness.workflows.patches import reverify_run

    ledger = Ledger(db, create=False)
    ran = reverify_run(
        ledger, old, run, where, tasks_dir=tasks_dir, replace=flags.replace, **flags.given()
    )  # fmt: skip
    _patch_run_done(ledger, run, ran, as_json)

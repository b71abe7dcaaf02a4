"""Harness commands: run, resume, rerun, clean, policy, quickstart, validate, grade, reverify (thin)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.agents.base import agent_options
from trialbook.agents.mini_config import DEFAULTS as MINI
from trialbook.agents.mini_config import config_options
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
    finite,
    valid_run,
    writable_runs_dir,
)
from trialbook.errors import UserError
from trialbook.harness.config import RunConfig, Tally
from trialbook.harness.paths import DEFAULT_RUNS_DIR, run_folders
from trialbook.harness.quickstart import AgentTally, QuickstartResult, quickstart
from trialbook.harness.runner import clean, rerun, resume_run, start_run
from trialbook.harness.validate import ValidateOptions, ValidateResult, validate
from trialbook.harness.where import make_executor
from trialbook.ledger.store import Ledger
from trialbook.outcomes import PolicyRow, policy_rows
from trialbook.report import layout, tables
from trialbook.report.validate import print_validate
from trialbook.rewards import HACK_POLICIES
from trialbook.stats.run_summaries import run_summary
from trialbook.tasks import load_tasks
from trialbook.verify import gold

Multiplier = Annotated[
    float | None,
    typer.Option("--timeout-multiplier", help="Agent timeout = task timeout x this.", min=0.01, callback=finite),
]


def _unit(param: typer.CallbackParam, value: float | None) -> float | None:
    """A finite number from 0 to 1 (Click's range would answer inf with its usage text, not one line)."""
    finite(param, value)
    if value is not None and not 0 <= value <= 1:
        raise UserError(f"{param.opts[0]} must be from 0 to 1, not {value:g}")
    return value


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


def _agent_name(agent: str | None, agent_cmd: str | None) -> str:
    """The agent a run records: `--agent` (a file path made absolute), or `cmd` for `--agent-cmd`."""
    from trialbook.agents.registry import agent_spec

    if agent_cmd is not None:
        if agent not in (None, "cmd"):
            raise UserError("give --agent or --agent-cmd, not both")
        return "cmd"
    if agent is None:
        raise UserError("--agent NAME (oracle, nop, mini, module:Class, file.py:Class) or --agent-cmd 'CMD' is needed")
    return agent_spec(agent)


ExecutorKind = Annotated[
    str, typer.Option("--executor", help="local (a thread pool on this machine) or ray (a Ray cluster's nodes).")
]
Backend = Annotated[
    str, typer.Option("--backend", help="Where sandboxes run: docker or podman (recorded in the run's stack).")
]
Engines = Annotated[
    list[str] | None,
    typer.Option("--engine", help="A Docker/Podman endpoint URL[=N trials at once] (repeatable): spread over them."),
]
RayAddress = Annotated[
    str | None, typer.Option("--ray-address", help="ray: the cluster's address [env RAY_ADDRESS; else auto].")
]


# options `run` and `validate` share
Concurrency = Annotated[int, typer.Option("--concurrency", min=1, help="Trials at once.")]
TaskIds = Annotated[
    list[str] | None, typer.Option("--task", help="Only this task id (repeatable, or comma-separated ids).")
]
RunsDir = Annotated[Path, typer.Option("--runs-dir", help="Where runs/<run>/<trial>/ go.", callback=writable_runs_dir)]


@app.command("run")
def run_cmd(
    tasks_dir: Path,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="oracle, nop, mini (an LLM), mini-swe-agent, codex, claude-code, opencode, aider (docs/agents.md), "
            "or your own: module:Class or file.py:Class.",
        ),
    ] = None,
    agent_cmd: Annotated[
        str | None, typer.Option("--agent-cmd", help="A command run as the agent in the sandbox (bash -c).")
    ] = None,
    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Attempts per task.")] = 1,
    concurrency: Concurrency = 1,
    timeout_multiplier: Multiplier = None,
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline", help="Minutes; then stragglers are stopped (incomplete).", min=0.01, callback=finite
        ),
    ] = None,
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries of infra failures.")] = 2,
    stop_after_errors: Annotated[
        int,
        typer.Option(
            "--stop-after-errors",
            min=0,
            help="Stop the run when this many trials in a row end with the same infrastructure error (0: never).",
        ),
    ] = 5,  # fmt: skip
    progress_every: Annotated[
        float,
        typer.Option(
            "--progress-every",
            min=0.1,
            callback=finite,
            envvar="TRIALBOOK_PROGRESS_EVERY",
            help="Seconds between progress lines when stderr is not a terminal (a log: nohup, Slurm, CI) "
            "[env TRIALBOOK_PROGRESS_EVERY].",
        ),
    ] = 30.0,  # fmt: skip
    warm_pool: Annotated[
        bool, typer.Option("--warm-pool/--no-warm-pool", help="Start the next containers ahead of need.")
    ] = True,
    runtime: Annotated[
        str, typer.Option("--runtime", help="Containers' OCI runtime: auto (crun if the daemon has it), default, NAME.")
    ] = "auto",
    endpoint: Annotated[
        list[str] | None, typer.Option("--endpoint", help="mini: OpenAI-compatible URL (repeatable).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="mini: model name (default: the server's first).")
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="mini: the environment variable holding the endpoint's API key (sent as "
            "Bearer; never stored) [default: OPENAI_API_KEY where set].",
        ),
    ] = None,  # fmt: skip
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            help="mini: NAME=VALUE sent on every request (repeatable; stored); a credential's header "
            "(X-Api-Key, ...) as NAME=env:VAR or NAME=file:PATH, read at each start, never stored.",
        ),
    ] = None,  # fmt: skip
    agent_config: Annotated[
        Path | None,
        typer.Option(
            "--agent-config",
            help="mini: a config file in mini-swe-agent's YAML shape (prompts, sampling, "
            "limits; e.g. its swebench.yaml).",
        ),
    ] = None,  # fmt: skip
    config_set: Annotated[
        list[str] | None,
        typer.Option(
            "-c",
            "--config",
            help="mini: KEY=VALUE over the config: model.model_kwargs.temperature=0.6, "
            "agent.step_limit=100, or an option's name (repeatable).",
        ),
    ] = None,  # fmt: skip
    temperature: Annotated[
        float | None,
        typer.Option(
            "--temperature", min=0, callback=finite, help=f"mini: sampling temperature [default: {MINI.temperature:g}]."
        ),
    ] = None,  # fmt: skip
    top_p: Annotated[
        float | None,
        typer.Option("--top-p", callback=_unit, help=f"mini: nucleus sampling, 0 to 1 [default: {MINI.top_p:g}]."),
    ] = None,  # fmt: skip
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help=f"mini: the run's seed; each (task, attempt) samples with its own, derived from it "
            f"[default: {MINI.seed}].",
        ),
    ] = None,  # fmt: skip
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help=f"mini: model calls per trial [default: {MINI.max_turns}].")
    ] = None,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="mini: prompt + completion tokens per trial [default: no limit]."),
    ] = None,  # fmt: skip
    max_output: Annotated[
        int | None,
        typer.Option("--max-output-tokens", min=1, help=f"mini: tokens per reply [default: {MINI.max_output_tokens}]."),
    ] = None,
    gateway: Annotated[
        bool,
        typer.Option(
            "--gateway",
            help="The model gateway in front of --endpoint: every trial keeps its turns' exact token ids "
            "(tokens.json, for train export-trajectories) when the engine returns none.",
        ),
    ] = False,  # fmt: skip
    chat_template: Annotated[
        Path | None,
        typer.Option("--chat-template", help="--gateway before llama-cpp-python's server: the served model's .gguf."),
    ] = None,
    tasks: TaskIds = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    replace: Replace = False,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    backend: Backend = "docker",
    engine: Engines = None,
    hack_policy: Annotated[
        str,
        typer.Option(
            "--hack-policy",
            help="A reward-hacking signature (hack_*) on a rewarded trial: zero (its training reward 0) or tag (only).",
        ),
    ] = "zero",
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Run an agent on every task in TASKS_DIR, each trial in its own Docker sandbox."""
    agent = _agent_name(agent, agent_cmd)
    if hack_policy not in HACK_POLICIES:
        raise UserError(f"--hack-policy must be one of {', '.join(HACK_POLICIES)}, not '{hack_policy}'")
    config = RunConfig(
        tasks_dir=str(tasks_dir),
        agent=agent,
        attempts=attempts,
        concurrency=concurrency,
        timeout_multiplier=timeout_multiplier or 1.0,
        deadline_minutes=deadline,
        retries=retries,
        stop_after_errors=stop_after_errors,
        progress_every_s=progress_every,
        warm_pool=warm_pool,
        runtime=runtime,
        backend=backend,
        engines=engine or [],
        hack_policy=hack_policy,
        tasks=comma_list(tasks),
        runs_dir=str(runs_dir.resolve()),
        agent_options=_options(
            agent,
            config_options(agent_config, config_set),
            endpoints=endpoint,
            model=model,
            api_key_env=api_key_env,
            headers=_headers(header),
            temperature=temperature,
            top_p=top_p,
            seed=seed,
            max_turns=max_turns,
            max_tokens=max_tokens,
            max_output_tokens=max_output,
            command=agent_cmd,
        )
        | _gateway(gateway, chat_template),
    )
    ledger = Ledger(db)
    where = make_executor(executor, ray_address, backend, engine, concurrency)
    tally, errors = start_run(ledger, run, config, replace=replace, executor=where)
    for err in errors:
        done(f"task {err.task_id}: {err.message} (recorded as infra_error)")
    _finish(ledger, run, tally, as_json)


def _options(agent: str, from_config: dict[str, object], **flags: object) -> dict[str, object]:
    """The agent's options: the config file's and -c's, then the flags given (a flag wins)."""
    given = {k: v for k, v in flags.items() if v not in (None, [], ())}
    return agent_options(agent, **{**from_config, **given})


def _gateway(on: bool, chat_template: Path | None) -> dict[str, object]:
    """The agent option `run --gateway` adds (rl/gateway_agent.py), with the model file whose template it renders."""
    if chat_template is not None and not on:
        raise UserError("--chat-template goes with --gateway")
    if chat_template is not None and not chat_template.is_file():
        raise UserError(f"--chat-template: no such file {chat_template}")
    return {"gateway": {"chat_template": str(chat_template.resolve()) if chat_template else None}} if on else {}


def _headers(given: list[str] | None) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in given or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--header {item}: expected NAME=VALUE")
        out[name.strip()] = value
    return out or None


def _stored_where(ledger: Ledger, run: str) -> tuple[str, list[str], int]:
    """The backend, --engine endpoints and concurrency a stored run ran with (docker on one daemon for a run from
    before them); an unknown run is left to the command's own check."""
    try:
        config = ledger.get_run(run).config
    except UserError:
        return "docker", [], 1
    backend, engines = str(config.get("backend") or "docker"), list(config.get("engines") or [])
    return backend, engines, int(config.get("concurrency") or 1)


@app.command("resume")
def resume_cmd(
    run: RunArg, executor: ExecutorKind = "local", ray_address: RayAddress = None, as_json: Json = False, db: Db = None
) -> None:
    """After a crash or kill -9: remove leftover containers, run exactly the trials with no record."""
    ledger = Ledger(db, create=False)  # a run to resume is in an existing ledger: a mistyped --db is an error
    tally, removed = resume_run(ledger, run, make_executor(executor, ray_address, *_stored_where(ledger, run)))
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
    where_ = make_executor(executor, ray_address, *_stored_where(ledger, run))
    tally = rerun(ledger, run, where, timeout_multiplier, where_)
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
    backend: Backend = "docker",
) -> None:
    """Remove the containers (and images built for a run) that this ledger's runs started (on every node with ray)."""
    if all_on_host and db:
        raise UserError("--all-on-host removes every ledger's containers: give it without --db")
    where = make_executor(executor, ray_address, backend)
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
    where = make_executor(executor, ray_address)
    data = quickstart(Ledger(db), tasks_dir, attempts, agent=agent, endpoints=endpoint, executor=where)
    emit(data, as_json, _print_quickstart)


@app.command("validate")
def validate_cmd(
    tasks_dir: Path,
    repeats: Annotated[int, typer.Option("--attempts", min=1, help="Trials per agent (oracle, nop) per task.")] = 3,
    timeout_multiplier: Multiplier = None,
    image_variant: Annotated[
        list[str] | None,
        typer.Option("--image-variant", help="LABEL=IMAGE: run under IMAGE (repeatable; LABEL= is the task's own)."),
    ] = None,
    run: Annotated[
        str | None, typer.Option("--run", help="Run name (default validate-<dir>-<time>).", callback=valid_run)
    ] = None,
    concurrency: Concurrency = 2,
    tasks: TaskIds = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    replace: Replace = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    as_json: Json = False,
    db: Db = None,
    write_gold: Annotated[
        bool,
        typer.Option("--write-gold", help="Write the gold statuses found (XFAIL...) to each task's tests/config.json."),
    ] = False,
    leaks: Annotated[
        bool, typer.Option("--leaks", help="Also scan each task's image for its solution: verdict leaky (Docker).")
    ] = False,
) -> None:
    """Check tasks: oracle and nop N times each, one verdict per task (ok, flaky, oracle_fails, ...).

    Exits 1 when some task's verdict is not `ok` (a CI job can gate on it), after the report."""
    opts = ValidateOptions(
        tasks_dir=tasks_dir,
        repeats=repeats,
        timeout_multiplier=timeout_multiplier or 1.0,
        concurrency=concurrency,
        runs_dir=runs_dir,
        tasks=comma_list(tasks),
        run=run,
        replace=replace,
        leaks=leaks,
    )
    result = validate(Ledger(db), opts, image_variant, make_executor(executor, ray_address))
    emit(result, as_json, print_validate, markdown, as_csv)
    if write_gold:
        _write_gold(tasks_dir, result)
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
def grade_cmd(
    predictions: Annotated[
        Path, typer.Argument(help="SWE-bench predictions: JSONL or JSON of instance_id, model_patch.")
    ],
    tasks_dir: TasksDir,
    run: Annotated[str, typer.Option("--run", help="Run name.", callback=valid_run)],
    concurrency: Concurrency = 1,
    timeout_multiplier: Multiplier = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    replace: Replace = False,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Grade each prediction's patch in a fresh container of its task, by the task's verifier: one run."""
    from trialbook.harness.patches import grade_predictions

    ledger = Ledger(db)
    ran = grade_predictions(
        ledger, predictions, tasks_dir, run, replace=replace, executor=make_executor(executor, ray_address),
        concurrency=concurrency, timeout_multiplier=timeout_multiplier or 1.0, runs_dir=str(runs_dir.resolve()),
    )  # fmt: skip
    _patch_run_done(ledger, run, ran, as_json)


@app.command("reverify")
def reverify_cmd(
    old: RunArg,
    run: Annotated[str, typer.Option("--run", help="The new run's name.", callback=valid_run)],
    tasks_dir: Annotated[
        Path | None, typer.Option("--tasks-dir", help="Task folders (default: the run's own; needed for imports).")
    ] = None,
    concurrency: Concurrency = 1,
    timeout_multiplier: Multiplier = None,
    runs_dir: RunsDir = DEFAULT_RUNS_DIR,
    replace: Replace = False,
    executor: ExecutorKind = "local",
    ray_address: RayAddress = None,
    as_json: Json = False,
    db: Db = None,
) -> None:
    """Grade the patches a run's trials left again, under today's verifier, as a new run (same attempts)."""
    from trialbook.harness.patches import reverify_run

    ledger = Ledger(db, create=False)
    ran = reverify_run(
        ledger, old, run, tasks_dir, replace=replace, executor=make_executor(executor, ray_address),
        concurrency=concurrency, timeout_multiplier=timeout_multiplier or 1.0, runs_dir=str(runs_dir.resolve()),
    )  # fmt: skip
    _patch_run_done(ledger, run, ran, as_json)

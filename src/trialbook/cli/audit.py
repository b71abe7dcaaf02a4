"""Verifier audit commands: regrade, audit, attribute, tasks from-swebench.

The grading modules import the `swebench` package (seconds), so they are imported inside the
commands, not when the CLI starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, RunArg, app, comma_list, done, emit, reading
from trialbook.errors import UserError
from trialbook.extras import require
from trialbook.report import audit as render


def _tasks_group() -> typer.Typer:
    """The `tasks` sub-app: another area may have registered one already; share it."""
    for group in app.registered_groups:
        if group.name == "tasks" and group.typer_instance is not None:
            return group.typer_instance
    tasks_app = typer.Typer(help="Task folders: build them from other sources.", no_args_is_help=True)
    app.add_typer(tasks_app, name="tasks")
    return tasks_app


tasks_app = _tasks_group()
Jobs = Annotated[int | None, typer.Option("--jobs", min=1, help="Processes parsing logs [default: CPUs, at most 8].")]


@app.command("regrade")
def regrade_cmd(
    run: RunArg, jobs: Jobs = None, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False,
    db: Db = None,
) -> None:
    """Re-grade every trial that has a verifier log with trialbook's grader; list disagreements."""
    from trialbook.audit.regrade import DEFAULT_JOBS, regrade_run

    emit(regrade_run(reading(db), run, jobs or DEFAULT_JOBS), as_json, render.print_regrade, markdown, as_csv)


@app.command("audit")
def audit_cmd(
    run: RunArg,
    vs: Annotated[str | None, typer.Option("--vs", help="Also list P2P tests failing here but passing there.")] = None,
    min_trials: Annotated[
        int, typer.Option("--min-trials", help="Trials a test must run in before 'fails in most' applies.")
    ] = 2,
    jobs: Jobs = None,
    write_tasks: Annotated[
        Path | None, typer.Option("--write-tasks", help="Write the tasks showing artifacts (for --exclude-tasks).")
    ] = None,
    as_json: Json = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    db: Db = None,
) -> None:
    """Failures that may not be the agent's fault: P2P penalties, log signatures, suspect tests."""
    from trialbook.audit.audit import audit_run
    from trialbook.audit.regrade import DEFAULT_JOBS

    if min_trials < 1:
        raise UserError("--min-trials must be at least 1")
    if write_tasks is not None and not write_tasks.parent.is_dir():
        raise UserError(f"cannot write {write_tasks}: no such directory")
    result = audit_run(reading(db), run, vs=vs, min_trials=min_trials, jobs=jobs or DEFAULT_JOBS)
    if write_tasks is not None:
        header = f"# tasks of run {run} with a verifier-artifact signature (trialbook audit)\n"
        write_tasks.write_text(header + "".join(t + "\n" for t in result.artifact_tasks))
        done(f"wrote {len(result.artifact_tasks)} task(s) showing artifacts to {write_tasks}")
    emit(result, as_json, render.print_audit, markdown, as_csv)


@app.command("attribute")
def attribute_cmd(
    old: str, new: str, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None
) -> None:
    """Decompose the resolved-rate change OLD -> NEW by transition and by repo (RUN@original: before reruns)."""
    from trialbook.audit.attribute import attribute_runs

    emit(attribute_runs(reading(db), old, new), as_json, render.print_attribute, markdown, as_csv)


@tasks_app.command("from-swebench")
def from_swebench_cmd(
    instances: Path,
    out: Annotated[Path, typer.Option("--out", help="Folder to write one task folder per instance into.")],
    ids: Annotated[
        list[str] | None, typer.Option("--task", help="Only this instance id (repeatable, or comma-separated).")
    ] = None,
    build: Annotated[bool, typer.Option("--build", help="Build each instance's image here from source.")] = False,
    repos: Annotated[
        Path | None, typer.Option("--repos", help="--build: folder of <owner>__<name>.git (default: fetch upstream).")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="--build: images built in parallel.")] = 1,
    image: Annotated[
        str | None,
        typer.Option(
            "--image",
            help="official: the sweb.eval names and conda activation (default without --build; with --build, images"
            " built here in that layout and tagged so); venv: --build's own /opt/venv images (default with --build).",
        ),
    ] = None,
    registry: Annotated[
        str | None, typer.Option("--registry", help="--image official: pull from this registry (HOST[:PORT]).")
    ] = None,
    from_lock: Annotated[
        Path | None, typer.Option("--from-lock", help="--build: rebuild exactly from the lock files of this folder.")
    ] = None,
    as_json: Json = False,
) -> None:
    """Task folders for SWE-bench Verified instances: on the official sweb.eval images, or built here (--build)."""
    require("swebench", "tasks from-swebench")
    from trialbook.tasks.swebench.generate import check_registry

    layout = image or ("venv" if build else "official")
    if layout not in ("official", "venv"):
        raise UserError(f"--image must be official or venv, got {image!r}")
    check_registry(registry, layout)
    if build:
        from trialbook.tasks.swebench.build import build_tasks

        result = build_tasks(instances, out, comma_list(ids), repos, jobs, layout=layout, registry=registry,
                             from_lock=from_lock)  # fmt: skip
        emit(result, as_json, render.print_build)
        return
    if repos is not None or from_lock is not None or layout != "official":
        raise UserError("--repos, --from-lock and --image venv are used only with --build")
    from trialbook.tasks.swebench.generate import write_tasks

    emit(write_tasks(instances, out, comma_list(ids), registry), as_json, render.print_from_swebench)

"""`tasks`: task folders built from other sources (`tasks from-swebench`).

The SWE-bench modules import the `swebench` package (seconds), so they are imported inside the command, not when
the CLI starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.cli.common import Json, app, comma_list, emit
from trialbook.errors import UserError
from trialbook.extras import require
from trialbook.report import audit as render

tasks_app = typer.Typer(help="Task folders: build them from other sources, scan their images.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


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
    scan: Annotated[
        bool,
        typer.Option(
            "--scan-leaks/--no-scan-leaks", help="--build: scan each image built for its solution (exit 1 if leaky)."
        ),
    ] = True,
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
        if not (scan and result.written):
            emit(result, as_json, render.print_build)
            return
        _build_and_scan(result, out, jobs, as_json)
        return
    if repos is not None or from_lock is not None or layout != "official":
        raise UserError("--repos, --from-lock and --image venv are used only with --build")
    from trialbook.tasks.swebench.generate import write_tasks

    emit(write_tasks(instances, out, comma_list(ids), registry), as_json, render.print_from_swebench)


def _build_and_scan(result: Any, out: Path, jobs: int, as_json: bool) -> None:
    """from-swebench --build: the images just built scanned for their solutions (verify/leak_scan.py)."""
    from dataclasses import replace

    from trialbook.report.leaks import print_leaks
    from trialbook.result_types import to_json
    from trialbook.verify.leak_scan import scan_tasks

    scan = scan_tasks(out, result.written, jobs)

    def human(r: Any) -> None:
        render.print_build(r)
        print_leaks(scan)

    emit(replace(result, leaks=to_json(scan)), as_json, human)
    if scan.verdicts.get("leaky"):
        raise typer.Exit(1)


@tasks_app.command("scan-leaks")
def scan_leaks_cmd(
    tasks_dir: Path,
    ids: Annotated[
        list[str] | None, typer.Option("--task", help="Only this task id (repeatable, or comma-separated).")
    ] = None,
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="Images scanned in parallel.")] = 2,
    as_json: Json = False,
) -> None:
    """Look for each task's reference solution inside its agent image (git objects, files, archives).

    Verdict per task: leaky, clean or not_scanned. Exits 1 when some task is leaky, after the report."""
    from trialbook.report.leaks import print_leaks
    from trialbook.verify.leak_scan import scan_tasks

    result = scan_tasks(tasks_dir, comma_list(ids), jobs)
    emit(result, as_json, print_leaks)
    if result.verdicts.get("leaky"):
        raise typer.Exit(1)

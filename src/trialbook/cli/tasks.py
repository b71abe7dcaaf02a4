"""`tasks`: task folders built from other sources (`tasks from-swebench`).

The SWE-bench modules import the `swebench` package (seconds), so they are imported inside the command, not when
the CLI starts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from trialbook.cli.common import Json, app, comma_list, done, emit, finite
from trialbook.cli.groups import Group, grouped
from trialbook.errors import UserError
from trialbook.extras import require
from trialbook.report import audit as render

tasks_app = typer.Typer(help="Task folders: build them from other sources, scan their images.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")


@dataclass
class BuildFlags:
    """How `from-swebench` builds the images (--build) or names the official ones."""

    build: Annotated[bool, typer.Option("--build", help="Build each instance's image here from source.")] = False
    repos: Annotated[
        Path | None, typer.Option("--repos", help="--build: folder of <owner>__<name>.git (default: fetch upstream).")
    ] = None
    jobs: Annotated[int, typer.Option("--jobs", min=1, help="--build: images built in parallel.")] = 1
    image: Annotated[
        str | None,
        typer.Option(
            "--image",
            help="official: the sweb.eval names and conda activation (default without --build; with --build, images"
            " built here in that layout and tagged so); venv: --build's own /opt/venv images (default with --build).",
        ),
    ] = None
    registry: Annotated[
        str | None, typer.Option("--registry", help="--image official: pull from this registry (HOST[:PORT]).")
    ] = None
    from_lock: Annotated[
        Path | None, typer.Option("--from-lock", help="--build: rebuild exactly from the lock files of this folder.")
    ] = None
    scan: Annotated[
        bool,
        typer.Option(
            "--scan-leaks/--no-scan-leaks", help="--build: scan each image built for its solution (exit 1 if leaky)."
        ),
    ] = True


@tasks_app.command("from-swebench")
@grouped(build=Group(BuildFlags))
def from_swebench_cmd(
    instances: Path,
    out: Annotated[Path, typer.Option("--out", help="Folder to write one task folder per instance into.")],
    build: BuildFlags,
    ids: Annotated[
        list[str] | None, typer.Option("--task", help="Only this instance id (repeatable, or comma-separated).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Task folders for SWE-bench Verified instances: on the official sweb.eval images, or built here (--build)."""
    require("swebench", "tasks from-swebench")
    from trialbook.tasks.swebench.generate import check_registry

    layout = build.image or ("venv" if build.build else "official")
    if layout not in ("official", "venv"):
        raise UserError(f"--image must be official or venv, got {build.image!r}")
    check_registry(build.registry, layout)
    if build.build:
        from trialbook.tasks.swebench.build import build_tasks

        result = build_tasks(
            instances,
            out,
            comma_list(ids),
            repos=build.repos,
            jobs=build.jobs,
            layout=layout,
            registry=build.registry,
            from_lock=build.from_lock,
        )
        if not (build.scan and result.written):
            emit(result, as_json, render.print_build)
            return
        _build_and_scan(result, out, build.jobs, as_json)
        return
    if build.repos is not None or build.from_lock is not None or layout != "official":
        raise UserError("--repos, --from-lock and --image venv are used only with --build")
    from trialbook.tasks.swebench.generate import write_tasks

    emit(write_tasks(instances, out, comma_list(ids), build.registry), as_json, render.print_from_swebench)


def _build_and_scan(result: Any, out: Path, jobs: int, as_json: bool) -> None:
    """from-swebench --build: the images just built scanned for their solutions (verify/leak_scan.py)."""
    from dataclasses import replace

    from trialbook.harness.run.stack import connect
    from trialbook.report.leaks import print_leaks
    from trialbook.result_types import to_json
    from trialbook.verify.leak_scan import scan_tasks

    scan = scan_tasks(connect(), out, result.written, jobs)

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
    from trialbook.harness.run.stack import connect
    from trialbook.report.leaks import print_leaks
    from trialbook.verify.leak_scan import scan_tasks

    result = scan_tasks(connect(), tasks_dir, comma_list(ids), jobs)
    emit(result, as_json, print_leaks)
    if result.verdicts.get("leaky"):
        raise typer.Exit(1)


@dataclass
class SuiteFlags:
    """What `synthesize` tries and how each candidate's tests run."""

    repo: Annotated[
        str | None, typer.Option("--repo", help="OWNER/NAME (default: from a folder named OWNER__NAME[.git]).")
    ] = None
    seed: Annotated[int, typer.Option("--seed", help="Seed of the candidates' order.")] = 0
    limit: Annotated[int, typer.Option("--max-candidates", min=1, help="Candidates tried at most.")] = 50
    tests: Annotated[
        list[str] | None, typer.Option("--test", help="Test path the suite runs (repeatable; default: profile).")
    ] = None
    pip: Annotated[
        list[str] | None, typer.Option("--pip", help="Test dependency installed beside it (repeatable).")
    ] = None
    pytest_args: Annotated[
        list[str] | None, typer.Option("--pytest-arg", help="Extra pytest argument (repeatable).")
    ] = None
    exclude: Annotated[
        Path | None, typer.Option("--exclude", help="Exclusion list (`tasks overlap --write-exclusions`).")
    ] = None


@tasks_app.command("synthesize")
@grouped(suite=Group(SuiteFlags))
def synthesize_cmd(
    source: Annotated[str, typer.Argument(help="A git repository folder, optionally @COMMIT (default HEAD).")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write one task folder per kept candidate into.")],
    suite: SuiteFlags,
    as_json: Json = False,
) -> None:
    """Bug tasks from a repository's own code: procedural changes kept when some of its tests catch them."""
    require("swebench", "tasks synthesize")
    from trialbook.pool.synthesize import synthesize
    from trialbook.report import pool as pool_render

    result = synthesize(source, out, progress=done, **asdict(suite))
    emit(result, as_json, pool_render.print_synthesized)


@tasks_app.command("overlap")
def overlap_cmd(
    pool: Annotated[Path, typer.Argument(help="Training pool: a folder of task folders or a SWE-bench JSONL.")],
    eval_set: Annotated[Path, typer.Argument(metavar="EVAL", help="Evaluation set, in either form.")],
    threshold: Annotated[
        float,
        typer.Option("--threshold", help="Statement similarity (word 5-shingle Jaccard) that flags.", callback=finite),
    ] = 0.5,
    write_split: Annotated[
        Path | None, typer.Option("--write-split", help="Write the eval tasks in the overlap (a task list).")
    ] = None,
    write_heldout: Annotated[
        Path | None, typer.Option("--write-heldout", help="Write the eval tasks out of the overlap (a task list).")
    ] = None,
    write_exclusions: Annotated[
        Path | None,
        typer.Option("--write-exclusions", help="Write EVAL's changed functions/files (for synthesize --exclude)."),
    ] = None,
    as_json: Json = False,
) -> None:
    """What a training pool shares with an evaluation set: repositories, files, functions, tests, statements."""
    from trialbook.pool.overlap import audit, exclusions
    from trialbook.report import pool as pool_render

    result = audit(pool, eval_set, threshold)
    if write_split is not None:
        write_split.write_text("".join(f"{t}\n" for t in result.in_overlap))
    if write_heldout is not None:
        write_heldout.write_text("".join(f"{t}\n" for t in result.out_of_overlap))
    if write_exclusions is not None:
        write_exclusions.write_text(exclusions(eval_set))
    emit(result, as_json, pool_render.print_overlap)


@tasks_app.command("from-rebench")
def from_rebench_cmd(
    rows: Annotated[Path, typer.Argument(help="SWE-rebench rows: a JSON object, a JSON list or JSON Lines.")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write one task folder per built row into.")],
    repos: Annotated[Path, typer.Option("--repos", help="Folder of <owner>__<name>.git holding the base commits.")],
    ids: Annotated[
        list[str] | None, typer.Option("--task", help="Only this instance id (repeatable, or comma-separated).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Task folders from SWE-rebench rows, each built here from the row's pinned requirements."""
    require("swebench", "tasks from-rebench")
    from trialbook.pool.rebench import build_rows
    from trialbook.report import pool as pool_render

    emit(build_rows(rows, out, repos, comma_list(ids)), as_json, pool_render.print_rebench)

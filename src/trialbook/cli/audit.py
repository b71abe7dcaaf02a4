"""Verifier audit commands: regrade, audit, attribute.

The grading modules import the `swebench` package (seconds), so they are imported inside the
commands, not when the CLI starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from trialbook.cli.common import Csv, Db, Json, Markdown, RunArg, app, done, emit, reading
from trialbook.cli.groups import Group, grouped
from trialbook.errors import UserError
from trialbook.report import audit as render

Jobs = Annotated[int | None, typer.Option("--jobs", min=1, help="Processes parsing logs [default: CPUs, at most 8].")]


@app.command("regrade")
def regrade_cmd(
    run: RunArg,
    jobs: Jobs = None,
    as_json: Json = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    db: Db = None,
) -> None:
    """Re-grade every trial that has a verifier log with trialbook's grader; list disagreements."""
    from trialbook.audit.regrade import DEFAULT_JOBS, regrade_run

    emit(regrade_run(reading(db), run, jobs or DEFAULT_JOBS), as_json, render.print_regrade, markdown, as_csv)


@dataclass
class AuditLook:
    """What `audit` looks for and where it writes the tasks it finds."""

    vs: Annotated[str | None, typer.Option("--vs", help="Also list P2P tests failing here but passing there.")] = None
    min_trials: Annotated[
        int, typer.Option("--min-trials", help="Trials a test must run in before 'fails in most' applies.")
    ] = 2
    jobs: Jobs = None
    write_tasks: Annotated[
        Path | None, typer.Option("--write-tasks", help="Write the tasks showing artifacts (for --exclude-tasks).")
    ] = None


@app.command("audit")
@grouped(look=Group(AuditLook))
def audit_cmd(
    run: RunArg,
    look: AuditLook,
    as_json: Json = False,
    markdown: Markdown = False,
    as_csv: Csv = False,
    db: Db = None,
) -> None:
    """Failures that may not be the agent's fault: P2P penalties, log signatures, suspect tests."""
    from trialbook.audit.failures import audit_run
    from trialbook.audit.regrade import DEFAULT_JOBS

    if look.min_trials < 1:
        raise UserError("--min-trials must be at least 1")
    if look.write_tasks is not None and not look.write_tasks.parent.is_dir():
        raise UserError(f"cannot write {look.write_tasks}: no such directory")
    result = audit_run(reading(db), run, vs=look.vs, min_trials=look.min_trials, jobs=look.jobs or DEFAULT_JOBS)
    if look.write_tasks is not None:
        header = f"# tasks of run {run} with a verifier-artifact signature (trialbook audit)\n"
        look.write_tasks.write_text(header + "".join(t + "\n" for t in result.artifact_tasks))
        done(f"wrote {len(result.artifact_tasks)} task(s) showing artifacts to {look.write_tasks}")
    emit(result, as_json, render.print_audit, markdown, as_csv)


@app.command("attribute")
def attribute_cmd(
    old: str, new: str, as_json: Json = False, markdown: Markdown = False, as_csv: Csv = False, db: Db = None
) -> None:
    """Decompose the resolved-rate change OLD -> NEW by transition and by repo (RUN@original: before reruns)."""
    from trialbook.audit.attribute import attribute_runs

    emit(attribute_runs(reading(db), old, new), as_json, render.print_attribute, markdown, as_csv)

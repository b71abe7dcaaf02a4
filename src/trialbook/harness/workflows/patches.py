"""`trialbook grade` and `trialbook reverify`: patches graded by the tasks' verifiers, as one new run.

Both run the patch agent (agents/patch.py) through `start_run`: each patch is applied in a fresh
container of its task and graded exactly as an agent's change is (limits, error policy, the diff carried
to fresh verifier containers, strict and official verdicts as the verifier defines them). `grade` takes a
SWE-bench predictions file; `reverify` takes the changes a run's trials left (their `patch.diff`), so a
run graded by an older verifier can be graded again by today's one (same tasks, same attempts).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trialbook.errors import UserError
from trialbook.harness.placement.choice import Where, make_executor
from trialbook.harness.run.config import RunConfig, Tally
from trialbook.harness.run.lifecycle import start_run
from trialbook.ledger.store import Ledger
from trialbook.outcomes import is_graded
from trialbook.tasks import TaskError

PATCH_NAMES = ("patch.diff", "agent/patch.diff")  # where a trial's change is stored (harness, Harbor, SWE-bench logs)


@dataclass
class PatchRun:
    """How a grade / reverify run went, for the command's last lines."""

    tally: Tally
    errors: list[TaskError]
    graded: int  # patches graded (trials planned)
    skipped: int  # reverify: trials with no stored change to grade again


def _task_ids(tasks_dir: Path) -> set[str]:
    if not tasks_dir.is_dir():
        raise UserError(f"no such tasks directory: {tasks_dir}")
    return {p.name for p in tasks_dir.iterdir() if (p / "task.toml").is_file()}


def _config(
    tasks_dir: Path, patches: dict[str, dict[str, str]], extra: Mapping[str, object], **given: object
) -> RunConfig:
    attempts = 1 + max(int(a) for by_attempt in patches.values() for a in by_attempt)
    return RunConfig(
        tasks_dir=str(tasks_dir),
        agent="patch",
        attempts=attempts,
        tasks=sorted(patches),
        agent_options={"patches": patches, **extra},
        **given,
    )


def grade_predictions(
    ledger: Ledger, predictions: Path, tasks_dir: Path, run: str, where: Where, *, replace: bool = False,
    **given: object,
) -> PatchRun:  # fmt: skip
    """Each prediction's patch graded in a fresh container of its task (`where` its trials run), as run `run`."""
    from trialbook.tasks.predictions import read_predictions

    read = read_predictions(predictions)
    known = _task_ids(tasks_dir)
    missing = sorted(set(read.patches) - known)
    if missing:
        raise UserError(
            f"{len(missing)} predicted instance(s) have no task folder in {tasks_dir} (first: {missing[0]});"
            " build them (`trialbook tasks from-swebench`) or drop those predictions"
        )
    patches = {task: {"0": patch} for task, patch in read.patches.items()}
    extra = {"predictions": str(predictions.resolve()), "models": read.models}
    config = _config(tasks_dir, patches, extra, **where.settings(), **given)
    tally, errors = start_run(ledger, run, config, replace=replace, executor=make_executor(where))
    return PatchRun(tally, errors, len(patches), 0)


def stored_patches(ledger: Ledger, run: str) -> tuple[dict[str, dict[str, str]], int, str | None]:
    """(task -> {attempt: patch}, trials skipped, the run's tasks_dir) of a run's current trials.

    A trial `trialbook run` graded without storing a patch made no change: its patch is empty. An imported
    trial without a stored patch, and an ungraded trial without one, cannot be graded again: skipped."""
    from trialbook.ledger import queries

    row = ledger.get_run(run)
    made_here = isinstance(row.config.get("tasks_dir"), str) and "agent" in row.config
    trials = list(ledger.trial_rows(row.id))
    found = queries.artifacts_of(ledger, [t.id for t in trials], PATCH_NAMES) if trials else {}
    patches: dict[str, dict[str, str]] = {}
    skipped = 0
    for t in trials:
        files = found.get(t.id, {})
        patch = next((files[n] for n in PATCH_NAMES if n in files), None)
        if patch is None and made_here and is_graded(t.outcome):
            patch = ""
        if patch is None:
            skipped += 1
            continue
        patches.setdefault(t.task_id, {})[str(t.attempt)] = patch
    tasks_dir = row.config.get("tasks_dir")
    return patches, skipped, tasks_dir if isinstance(tasks_dir, str) else None


def reverify_run(
    ledger: Ledger, old: str, new: str, where: Where, *, tasks_dir: Path | None = None, replace: bool = False,
    **given: object,
) -> PatchRun:  # fmt: skip
    """The patches run `old`'s trials left graded again by today's verifier (`where` its trials run), as run `new`."""
    if old == new:
        raise UserError("--run must name a new run: the old one stays as it was graded")
    patches, skipped, stored_dir = stored_patches(ledger, old)
    if not patches:
        raise UserError(f"run '{old}' has no stored patches to grade again (its trials keep no patch.diff)")
    folder = tasks_dir or (Path(stored_dir) if stored_dir else None)
    if folder is None:
        raise UserError(f"run '{old}' was imported: give --tasks-dir DIR, the task folders to grade its patches on")
    missing = sorted(set(patches) - _task_ids(folder))
    if missing:
        raise UserError(f"{len(missing)} task(s) of run '{old}' have no folder in {folder} (first: {missing[0]})")
    config = _config(folder, patches, {"reverified_from": old}, **where.settings(), **given)
    tally, errors = start_run(ledger, new, config, replace=replace, executor=make_executor(where))
    return PatchRun(tally, errors, sum(len(v) for v in patches.values()), skipped)

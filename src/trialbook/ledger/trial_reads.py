"""One run's trials as a list, and one trial's stored files (`trialbook trials`, `trialbook log`).

A trial is named by its ledger id (what `trials` prints) or by its trial name (the container / folder
name `tb-<run>-<task>-<attempt>-<hex>`, or a Harbor trial folder's name).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from trialbook.errors import UserError
from trialbook.extra_schema import read_extra
from trialbook.ledger.reads import cause
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.schema import artifacts, trials
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome
from trialbook.result_types import Result

TRACEBACK_FILE = "traceback.txt"  # harness/trial/execution.py keeps an exception's traceback under this name

# What `log --verifier / --agent / --patch` prints: the first of these names the trial has.
LOG_KINDS: dict[str, tuple[str, ...]] = {
    "verifier": ("verifier.log", "verifier/test-stdout.txt", "test_output.txt", "test-stdout.txt"),
    "agent": ("agent.log", "agent/log.txt", "agent/trajectory.json", "trajectory.json", "run_instance.log"),
    "patch": ("patch.diff", "agent/patch.diff"),
}


@dataclass(frozen=True)
class TrialLine(Result):
    id: int
    task_id: str
    attempt: int
    outcome: str
    reward: float | None
    exception: str | None
    duration_s: float | None
    trial_name: str | None
    folder: str | None  # the trial's folder, for a run `trialbook run` made
    cause: str | None = None  # why it ended as it did: the first line of its exception's message


@dataclass(frozen=True)
class TrialList(Result):
    run: str
    trials: list[TrialLine]
    folder: str | None  # where the run's trial folders are (None: an imported run)


@dataclass(frozen=True)
class StoredFile(Result):
    name: str
    chars: int


@dataclass(frozen=True)
class TrialFiles(Result):
    trial: TrialLine
    run: str
    files: list[StoredFile]
    exception_message: str | None = None  # whole (the line's `cause` is its first line)
    traceback: str | None = None  # the exception's traceback, where the trial kept one (TRACEBACK_FILE)


# (run config, run name) -> the run's trial folder, None for an imported run: harness/run/paths.py's rule, which the
# caller passes in (the ledger layer does not import the harness)
FolderOf = Callable[[dict[str, Any], str], Path | None]


def _no_folder(_config: dict[str, Any], _run: str) -> Path | None:
    return None


def _line(t: TrialRow, folder: Path | None) -> TrialLine:
    name = read_extra(t).trial_name
    where = folder / name if folder is not None and name is not None and (folder / name).is_dir() else None
    return TrialLine(t.id, t.task_id, t.attempt, t.outcome, t.reward, t.exception, t.duration_s,
                     name, str(where) if where else None,
                     cause(t.exception, t.exception_message))  # fmt: skip


def list_trials(
    ledger: Ledger, run: str, where: str | None = None, task: str | None = None, folder_of: FolderOf = _no_folder
) -> TrialList:
    row = ledger.get_run(run)
    condition = None
    if where is not None:
        try:
            condition = trials.c.outcome == Outcome(where).value
        except ValueError:
            raise UserError(f"--where must be one of: {', '.join(o.value for o in Outcome)}") from None
    if task is not None:
        condition = trials.c.task_id == task if condition is None else condition & (trials.c.task_id == task)
    folder = folder_of(row.config, run)
    found = [_line(t, folder) for t in ledger.trial_rows(row.id, where=condition)]
    if task is not None and not found and next(ledger.trial_rows(row.id, where=trials.c.task_id == task), None) is None:
        raise UserError(f"run '{run}' has no trials of task '{task}'")
    return TrialList(run, found, str(folder) if folder is not None and folder.is_dir() else None)


def find_trial(ledger: Ledger, ref: str) -> tuple[TrialRow, str]:
    """The trial with ledger id `ref`, or whose trial name is `ref`; and its run's name."""
    from trialbook.ledger.schema import runs

    # a name is inside the extra JSON: narrowed with LIKE, then checked on the decoded value
    condition = trials.c.id == int(ref) if ref.isdigit() else trials.c.extra.like(f"%{json.dumps(ref)[1:-1]}%")
    q = select(trials.c.run_id, trials.c.id).where(condition).order_by(trials.c.id)
    with ledger.engine.connect() as conn:
        candidates = list(conn.execute(q))
        names = {run_id: name for run_id, name in conn.execute(select(runs.c.id, runs.c.name))}
    for run_id, trial_id in candidates:
        for t in ledger.trial_rows(run_id, current_only=False, where=trials.c.id == trial_id):
            if ref.isdigit() or read_extra(t).trial_name == ref:
                return t, names[run_id]
    raise UserError(f"no trial '{ref}' (give a trial id from `trialbook trials RUN`, or a trial name)")


def trial_files(ledger: Ledger, ref: str, folder_of: FolderOf = _no_folder) -> TrialFiles:
    t, run = find_trial(ledger, ref)
    q = select(artifacts.c.name, func.length(artifacts.c.content)).where(artifacts.c.trial_id == t.id)
    with ledger.engine.connect() as conn:
        files = [StoredFile(n, int(size or 0)) for n, size in conn.execute(q.order_by(artifacts.c.name))]
    kept = ledger.artifact(t.id, TRACEBACK_FILE) if any(f.name == TRACEBACK_FILE for f in files) else None
    line = _line(t, folder_of(ledger.get_run(run).config, run))
    return TrialFiles(line, run, files, t.exception_message if line.cause else None, kept or None)


def trial_log(ledger: Ledger, ref: str, kind: str) -> str:
    """The trial's stored verifier log, agent log/trajectory or patch; UserError naming what it has instead."""
    found = trial_files(ledger, ref)
    have = {f.name for f in found.files}
    name = next((n for n in LOG_KINDS[kind] if n in have), None)
    if name is None:
        stored = ", ".join(sorted(have)) or "none"
        what = "patch" if kind == "patch" else f"{kind} log"
        raise UserError(f"trial {found.trial.id} has no stored {what} (its files: {stored})")
    return ledger.artifact(found.trial.id, name) or ""

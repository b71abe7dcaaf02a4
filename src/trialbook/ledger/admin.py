"""`runs delete` / `runs rename`: one transaction each; a run that a logged preregistration check
used (ledger/plans.py) is refused unless forced, and so is a run a live process is executing.

A run made by the harness has folders on disk named after it (harness/run/paths.py `run_folders`). A
rename moves them inside the ledger transaction: a failed move rolls the ledger back, and a failed
commit moves them back, so the ledger and the disk never disagree about the run's name.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from trialbook.errors import TrialbookError, UserError
from trialbook.ledger import locks, plans
from trialbook.ledger.schema import runs, steps, trials
from trialbook.ledger.store import Ledger

Moves = Sequence[tuple[Path, Path]]  # (folder as named now, folder under the new name)


def _referenced(name: str, conn: object, force: bool, what: str) -> None:
    if not force and name in plans.referenced_runs(conn):  # type: ignore[arg-type]
        raise UserError(
            f"run '{name}' is used by a preregistration check logged in this ledger: {what} it would"
            " change what that check refers to (--force to do it anyway)"
        )


def delete_run(ledger: Ledger, name: str, force: bool = False, folders: Sequence[Path] = ()) -> dict[str, Any]:
    """Delete a run with its trials, artifacts and steps, then its `folders` (after the commit: a
    failed removal leaves files the ledger no longer names, never the reverse, and a later run of
    the same name would otherwise read them back with its own); returns what was deleted."""
    run_id = ledger.get_run(name).id
    with ledger.transaction() as conn:
        locks.refuse_if_live(conn, name)
        _referenced(name, conn, force, "deleting")
        n_trials = conn.execute(select(func.count()).where(trials.c.run_id == run_id)).scalar_one()
        n_steps = conn.execute(select(func.count()).where(steps.c.run_id == run_id)).scalar_one()
        ledger._delete_run(conn, run_id)
    removed: list[str] = []
    left: list[str] = []
    for folder in folders:
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
            (left if folder.exists() else removed).append(str(folder))
    return {"trials": int(n_trials), "steps": int(n_steps), "folders_removed": removed, "folders_left": left}


def _move(moves: Moves) -> list[tuple[Path, Path]]:
    done: list[tuple[Path, Path]] = []
    for src, dst in moves:
        try:
            src.rename(dst)  # one rename(2): the folder is wholly under one name or the other
        except OSError as exc:
            _undo(done)
            raise TrialbookError(f"cannot move {src} to {dst}: {exc.strerror or exc}; nothing was renamed") from None
        done.append((src, dst))
    return done


def _undo(done: list[tuple[Path, Path]]) -> None:
    for src, dst in reversed(done):
        dst.rename(src)


def rename_run(ledger: Ledger, old: str, new: str, force: bool = False, folders: Moves = ()) -> list[Path]:
    """Rename a run (a forced rename also renames it in the logged preregistration checks) and move
    its `folders` (from, to) with it; returns the folders under their new name."""
    run_id = ledger.get_run(old).id
    for _, dst in folders:
        if dst.exists():
            raise UserError(f"{dst} already exists: the run's folder cannot move there (move it away first)")
    moved: list[tuple[Path, Path]] = []
    try:
        with ledger.transaction() as conn:
            locks.refuse_if_live(conn, old)
            if conn.execute(select(runs.c.id).where(runs.c.name == new)).first() is not None:
                raise UserError(f"run '{new}' already exists")
            _referenced(old, conn, force, "renaming")
            conn.execute(runs.update().where(runs.c.id == run_id).values(name=new))
            plans.rename_references(conn, old, new)
            moved = _move([(src, dst) for src, dst in folders if src.exists()])
    except BaseException:
        _undo(moved)
        raise
    return [dst for _, dst in moved]

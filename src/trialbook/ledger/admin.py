"""`runs delete` / `runs rename`: one transaction each; a run that a logged preregistration check
used (ledger/plans.py) is refused unless forced, and so is a run a live process is executing."""

from __future__ import annotations

from sqlalchemy import func, select

from trialbook.errors import UserError
from trialbook.ledger import locks, plans
from trialbook.ledger.schema import runs, steps, trials
from trialbook.ledger.store import Ledger


def _referenced(name: str, conn: object, force: bool, what: str) -> None:
    if not force and name in plans.referenced_runs(conn):  # type: ignore[arg-type]
        raise UserError(
            f"run '{name}' is used by a preregistration check logged in this ledger: {what} it would"
            " change what that check refers to (--force to do it anyway)"
        )


def delete_run(ledger: Ledger, name: str, force: bool = False) -> dict[str, int]:
    """Delete a run with its trials, artifacts and steps; returns what was deleted."""
    run_id = ledger.get_run(name).id
    with ledger.transaction() as conn:
        locks.refuse_if_live(conn, name)
        _referenced(name, conn, force, "deleting")
        n_trials = conn.execute(select(func.count()).where(trials.c.run_id == run_id)).scalar_one()
        n_steps = conn.execute(select(func.count()).where(steps.c.run_id == run_id)).scalar_one()
        ledger._delete_run(conn, run_id)
    return {"trials": int(n_trials), "steps": int(n_steps)}


def rename_run(ledger: Ledger, old: str, new: str, force: bool = False) -> None:
    """Rename a run (a forced rename also renames it in the logged preregistration checks)."""
    run_id = ledger.get_run(old).id
    with ledger.transaction() as conn:
        locks.refuse_if_live(conn, old)
        if conn.execute(select(runs.c.id).where(runs.c.name == new)).first() is not None:
            raise UserError(f"run '{new}' already exists")
        _referenced(old, conn, force, "renaming")
        conn.execute(runs.update().where(runs.c.id == run_id).values(name=new))
        plans.rename_references(conn, old, new)

"""The ledger's typed rows as plain dicts, for end-to-end tests that assert on many fields by name."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from trialbook.ledger.store import Ledger


def run_dict(ledger: Ledger, name: str) -> dict[str, Any]:
    return asdict(ledger.get_run(name))


def trial_dicts(ledger: Ledger, run: str, current_only: bool = True) -> list[dict[str, Any]]:
    """The run's trials (current ones unless `current_only=False`) in insertion order."""
    return [asdict(t) for t in ledger.trial_rows(ledger.get_run(run).id, current_only)]

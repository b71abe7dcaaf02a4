"""Writing one finished trial: the ledger row (its own transaction) and the Harbor-style folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from trialbook.harness.paths import TrialPaths
from trialbook.harness.trial import TrialResult
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import FINDINGS

_write_lock = threading.Lock()


def record_trial(ledger: Ledger, run_id: int, result: TrialResult, supersedes: int | None = None) -> int:
    """Insert the trial (+ its logs as artifacts) in one transaction; mark `supersedes` replaced by it."""
    t = result.trial
    with _write_lock, ledger.transaction() as conn:
        new_id = ledger.record_trial(conn, trial_row(run_id, t), supersedes)
        logs = [(new_id, "agent.log", result.agent_log), (new_id, "verifier.log", result.verifier_log)]
        logs += [(new_id, name, text) for name, text in result.extra_files.items()]
        ledger.insert_artifacts(conn, [row for row in logs if row[2]])
    return new_id


def harbor_result(result: TrialResult, run: str) -> dict[str, Any]:
    """A Harbor-shaped result.json (so `trialbook import harbor runs/<run>` reads it back)."""
    t = result.trial
    extra = t.extra or {}
    phases = extra.get("phase_s", {})
    return {
        "task_name": t.task_id,
        "trial_name": result.name,
        "run": run,
        "attempt": t.attempt,
        "outcome": t.outcome.value,
        "started_at": t.started_at,
        "finished_at": t.finished_at,
        "agent_info": {"name": extra.get("agent")},
        "verifier_result": None if t.reward is None else {"rewards": {"reward": t.reward}},
        "exception_info": None
        if t.exception is None or t.exception in FINDINGS
        else {"exception_type": t.exception, "exception_message": t.exception_message},
        "tests": t.tests,
        "phase_seconds": phases,
        "extra": extra,
    }


def write_or_warn(ledger: Ledger, trial_id: int, base: Path, run: str, result: TrialResult) -> str | None:
    """Write the trial's folder; the trial is already in the ledger, so a failed write (a full or
    read-only --runs-dir) becomes a warning on the trial, not the end of the run. Returns the warning."""
    try:
        write_trial_dir(base, run, result)
        return None
    except OSError as exc:
        warning = f"trial folder not written under {base}: {exc.strerror or exc}"
    with _write_lock, ledger.transaction() as conn:
        ledger.add_trial_warning(conn, trial_id, warning)
    return warning


def write_trial_dir(base: Path, run: str, result: TrialResult) -> Path:
    """Write the trial's folder under `base` (the run's folder, RunPaths.folder); result.json last."""
    p = TrialPaths(base / result.name)
    p.agent_dir.mkdir(parents=True, exist_ok=True)
    p.verifier_dir.mkdir(exist_ok=True)
    p.agent_log.write_text(result.agent_log)
    p.verifier_log.write_text(result.verifier_log)
    for name, text in result.extra_files.items():
        p.agent_file(name).write_text(text)
    if result.trial.reward is not None:
        p.reward.write_text(f"{result.trial.reward:g}\n")
    tmp = p.result.with_name(p.result.name + ".tmp")
    tmp.write_text(json.dumps(harbor_result(result, run), indent=2))
    tmp.replace(p.result)
    return p.folder

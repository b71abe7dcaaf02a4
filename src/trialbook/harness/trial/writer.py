"""Writing one finished trial: the ledger row (its own transaction) and the Harbor-style folder."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sqlalchemy import Connection

from trialbook.extra_schema import read_extra
from trialbook.harness.run.config import PlannedTrial
from trialbook.harness.run.paths import TrialPaths
from trialbook.harness.trial.execution import Stopper, TrialResult, TrialSettings
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import FINDINGS
from trialbook.records import Trial
from trialbook.redact import scrub, scrub_value

_write_lock = threading.Lock()


def record_trial(ledger: Ledger, run_id: int, result: TrialResult, supersedes: int | None = None) -> int:
    """Insert the trial (+ its logs as artifacts) in one transaction; mark `supersedes` replaced by it."""
    return record_trials(ledger, run_id, [(result, supersedes)])[0]


def record_trials(ledger: Ledger, run_id: int, items: list[tuple[TrialResult, int | None]]) -> list[int]:
    """Insert trials that finished together (each with the trial it supersedes, or None) in one transaction: one
    commit and one summary refresh for all (SQLite's single writer records ~10x as many trials a second when a
    thousand end at once: benchmarks/bench_scale.py). Their ids, in order. A PostgreSQL ledger that restarts is
    waited for (Ledger.write) and the transaction made again: a trial whose row a lost commit did write (its trial
    name in the run) is found, not inserted twice."""

    def write(conn: Connection) -> list[int]:
        ids: list[int] = []
        logs: list[tuple[int, str, str]] = []
        have = ledger.trial_names(conn, run_id, {r.trial.task_id for r, _ in items}) if tries else {}
        tries.append(1)
        for result, supersedes in items:
            if result.name in have:
                ids.append(have[result.name])
                continue
            new_id = ledger.record_trial(conn, trial_row(run_id, result.trial), supersedes)
            ids.append(new_id)
            logs += [(new_id, "agent.log", result.agent_log), (new_id, "verifier.log", result.verifier_log)]
            logs += [(new_id, name, text) for name, text in result.extra_files.items()]
        ledger.insert_artifacts(conn, [row for row in logs if row[2]])
        return ids

    tries: list[int] = []
    with _write_lock:
        return ledger.write(write)


def recorded(
    ledger: Ledger, run_id: int, executor: Any, plans: list[PlannedTrial], settings: TrialSettings, stopper: Stopper,
    concurrency: int, deadline_at: float | None,
) -> Iterator[tuple[PlannedTrial, TrialResult, int]]:  # fmt: skip
    """The executor's finished trials, each yielded once it is in the ledger, with its id: the trials that finished
    together are recorded in one transaction (record_trials) when the executor hands them over together (`batches`,
    harness/placement/executors.LocalExecutor), else one by one. Interrupted ones (None) are left out."""
    batches = getattr(executor, "batches", None)
    if batches is not None:
        groups = batches(plans, settings, stopper, concurrency, deadline_at)
    else:
        groups = ([one] for one in executor.results(plans, settings, stopper, concurrency, deadline_at))
    for group in groups:
        done = [(plan, result) for plan, result in group if result is not None]
        if done:
            ids = record_trials(ledger, run_id, [(result, plan.supersedes) for plan, result in done])
            for (plan, result), trial_id in zip(done, ids, strict=True):
                yield plan, result, trial_id


def harbor_result(result: TrialResult, run: str) -> dict[str, Any]:
    """A Harbor-shaped result.json (so `trialbook import harbor runs/<run>` reads it back)."""
    t = result.trial
    notes = read_extra(t)
    return {
        "task_name": t.task_id,
        "trial_name": result.name,
        "run": run,
        "attempt": t.attempt,
        "outcome": t.outcome.value,
        "started_at": t.started_at,
        "finished_at": t.finished_at,
        "agent_info": {"name": notes.agent},
        "verifier_result": None if t.reward is None else {"rewards": {"reward": t.reward}},
        "exception_info": None
        if t.exception is None or t.exception in FINDINGS
        else {"exception_type": t.exception, "exception_message": t.exception_message},
        "tests": t.tests,
        "phase_seconds": notes.phase_s,
        "extra": dict(notes.raw),
    }


def write_or_warn(ledger: Ledger, trial_id: int, base: Path, run: str, result: TrialResult) -> str | None:
    """Write the trial's folder; the trial is already in the ledger, so a failed write (a full or
    read-only --runs-dir) becomes a warning on the trial, not the end of the run. Returns the warning."""
    try:
        write_trial_dir(base, run, result)
        return None
    except OSError as exc:
        warning = f"trial folder not written under {base}: {exc.strerror or exc}"
        shutil.rmtree(base / result.name, ignore_errors=True)  # no half folder: `resume` writes it whole later
    with _write_lock, ledger.transaction() as conn:
        ledger.add_trial_warning(conn, trial_id, warning)
    return warning


def write_trial_dir(base: Path, run: str, result: TrialResult) -> Path:
    """Write the trial's folder under `base` (the run's folder, RunPaths.folder); result.json last."""
    p = TrialPaths(base / result.name)
    p.agent_dir.mkdir(parents=True, exist_ok=True)
    p.verifier_dir.mkdir(exist_ok=True)
    p.agent_log.write_text(scrub(result.agent_log))
    p.verifier_log.write_text(scrub(result.verifier_log))
    for name, text in result.extra_files.items():
        p.agent_file(name).write_text(scrub(text))
    if result.trial.reward is not None:
        p.reward.write_text(f"{result.trial.reward:g}\n")
    tmp = p.result.with_name(p.result.name + ".tmp")
    tmp.write_text(json.dumps(scrub_value(harbor_result(result, run)), indent=2))
    tmp.replace(p.result)
    return p.folder


def restore_folders(ledger: Ledger, run_id: int, base: Path, run: str) -> int:
    """Write again, from the ledger (its row and its logs), the folder of every current trial that has none (its
    runs folder was full or unwritable when it ended: write_or_warn). Returns how many; one that still cannot be
    written raises OSError, the ones before it written."""
    n = 0
    fields = set(Trial.model_fields)
    for row in ledger.trial_rows(run_id):
        name = read_extra(row).trial_name
        if not name or TrialPaths(base / name).result.is_file():
            continue
        files = ledger.artifacts_of(row.id)
        trial = Trial(**{k: v for k, v in asdict(row).items() if k in fields})
        result = TrialResult(trial, name, files.pop("agent.log", ""), files.pop("verifier.log", ""), extra_files=files)
        try:
            write_trial_dir(base, run, result)
        except OSError:
            shutil.rmtree(base / name, ignore_errors=True)
            raise
        n += 1
    return n

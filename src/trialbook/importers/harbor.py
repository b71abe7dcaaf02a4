"""Harbor job folders: one sub-folder per trial, each with a `result.json` (Harbor's TrialResult).

Field names follow harbor.models.trial.result (0.18-0.26): `task_name`, `trial_name`,
`verifier_result.rewards`, `exception_info.exception_type`, `agent_info`, `agent_result.n_*_tokens`,
`started_at`/`finished_at` and per-phase TimingInfo. A folder without result.json is `incomplete`.
The trial folder's logs, reward files, per-test results, trajectory and patch are kept (harbor_files.py).
"""

from __future__ import annotations

import json
import math
import warnings
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from trialbook.errors import InputWarning, UserError
from trialbook.extra_schema import with_extra
from trialbook.importers import harbor_files as files
from trialbook.importers.to_ledger import import_run
from trialbook.ledger.store import Ledger, trial_row
from trialbook.names import safe_name
from trialbook.outcomes import REWARD_RANGE, Outcome, classify, is_graded, pick_reward, reward_problem, scaled_reward
from trialbook.records import Run, Trial, iso_time, parse_time, repo_from_task_id

PHASES = ("environment_setup", "agent_setup", "agent_execution", "verifier")


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: expected a JSON object")
    return data


def _when(value: Any, field: str) -> datetime:
    """records.parse_time (the one timestamp rule); ValueError naming the field (the caller names the file)."""
    try:
        return parse_time(value)
    except (ValueError, OverflowError, OSError):
        raise ValueError(f"{field} must be ISO-8601 text or Unix seconds, got {value!r}") from None


def _seconds(timing: dict[str, Any] | None, where: str = "") -> float | None:
    if not isinstance(timing, dict) or not timing.get("started_at") or not timing.get("finished_at"):
        return None
    start = _when(timing["started_at"], f"{where}started_at")
    end = _when(timing["finished_at"], f"{where}finished_at")
    return round((end - start).total_seconds(), 3)


def _time(result: dict[str, Any], key: str) -> str | None:
    value = result.get(key)
    return None if value is None else iso_time(value, key)


def trial_from_result(result: dict[str, Any], reward_range: tuple[float, float] = REWARD_RANGE) -> Trial:
    """The trial of one result.json; ValueError (the caller names the file) for a bad reward or time."""
    for key in ("verifier_result", "exception_info", "agent_result"):
        if not isinstance(result.get(key) or {}, dict):
            raise UserError(f"trial {result.get('trial_name')!r}: {key} must be a JSON object, got {result[key]!r:.60}")
    rewards = (result.get("verifier_result") or {}).get("rewards")
    try:
        reward = pick_reward(rewards) if isinstance(rewards, dict) or rewards is None else None
    except (TypeError, ValueError):
        raise ValueError(f"rewards must be numbers, got {rewards!r}") from None
    if reward is not None and not math.isfinite(reward):
        raise UserError(f"trial {result.get('trial_name')!r}: reward {reward} is not a finite number")
    if reward is not None and (problem := reward_problem(reward, reward_range)):
        raise ValueError(problem)
    if reward is not None:
        reward = scaled_reward(reward, reward_range)
    exc = result.get("exception_info") or {}
    outcome = classify(exc.get("exception_type"), reward)
    agent = result.get("agent_result") or {}
    n_in, n_out = agent.get("n_input_tokens"), agent.get("n_output_tokens")
    task = result["task_name"]
    extra = with_extra(None, trial_name=result.get("trial_name"))
    if rewards and set(rewards) != {"reward"}:
        extra = with_extra(extra, rewards=rewards)
    phases = {p: _seconds(result.get(p), f"{p}.") for p in PHASES if result.get(p)}
    if phases:
        extra = with_extra(extra, phase_s=phases)
    return Trial(
        task_id=task,
        repo=repo_from_task_id(task),
        outcome=outcome,
        reward=reward if (is_graded(outcome) or reward is not None) else None,
        exception=exc.get("exception_type"),
        exception_message=(exc.get("exception_message") or "")[:2000] or None,
        duration_s=_seconds(result),
        tokens=None if n_in is None and n_out is None else (n_in or 0) + (n_out or 0),
        started_at=_time(result, "started_at"),
        finished_at=_time(result, "finished_at"),
        extra=extra,
    )


def _stack(job: Path, first: dict[str, Any] | None) -> dict[str, Any]:
    stack: dict[str, Any] = {"harness": "harbor"}
    lock = job / "lock.json"
    if lock.is_file():
        stack["harness_version"] = (_load(lock).get("harbor") or {}).get("version")
    if first:
        info = first.get("agent_info") or {}
        stack["agent"] = info.get("name")
        stack["agent_version"] = info.get("version")
        stack["model"] = (info.get("model_info") or {}).get("name")
        env = ((first.get("config") or {}).get("environment") or {}).get("type")
        stack["environment"] = env
    return {k: v for k, v in stack.items() if v is not None}


def _trial_folders(job: Path) -> list[Path]:
    return sorted(p for p in job.iterdir() if p.is_dir())


def import_harbor(
    ledger: Ledger,
    path: Path,
    run_name: str | None = None,
    replace: bool = False,
    reward_range: tuple[float, float] | None = None,
) -> list[tuple[str, int]]:
    """A job folder as one run; a folder of jobs as one run per job (named after each), or as the one run
    `run_name` holding every job's trials. Returns [(run name, trials)]."""
    jobs = files.jobs_in(path)
    if len(jobs) > 1 and run_name is None:
        return [_import_jobs(ledger, [job], None, replace, reward_range) for job in jobs]
    return [_import_jobs(ledger, jobs, run_name, replace, reward_range)]


def _import_jobs(
    ledger: Ledger,
    jobs: list[Path],
    run_name: str | None,
    replace: bool,
    reward_range: tuple[float, float] | None,
) -> tuple[str, int]:
    folders = [f for job in jobs for f in _trial_folders(job)]
    loaded = [(f, _load(f / "result.json") if (f / "result.json").is_file() else None) for f in folders]
    start: dict[Path, float] = {}
    for folder, result in loaded:
        if result is not None and not result.get("task_name"):
            raise UserError(f"{folder / 'result.json'}: not a Harbor trial result (no task_name)")
        if result is not None and result.get("started_at") is not None:
            try:
                start[folder] = _when(result["started_at"], "started_at").timestamp()
            except ValueError as exc:
                raise UserError(f"{folder / 'result.json'}: {exc}") from None
    # attempts are numbered per task in start order; cut-off trials (no result) come last
    loaded.sort(key=lambda fr: (fr[1] is None, start.get(fr[0], float("-inf")), fr[0].name))
    first = next((r for _, r in loaded if r is not None), None)
    name = run_name or safe_name(jobs[0].resolve().name)
    _warn_if_mixed(name, [r for _, r in loaded if r is not None])
    kept: dict[tuple[str, int], dict[str, str]] = {}

    def rows(run_id: int) -> Iterator[tuple[Any, ...]]:
        attempts: Counter[str] = Counter()
        for folder, result in loaded:
            if result is None:
                config = _load(folder / "config.json") if (folder / "config.json").is_file() else {}
                task = _task_of_config(config) or folder.name.rsplit("__", 1)[0]
                trial = Trial(task_id=task, repo=repo_from_task_id(task), outcome=Outcome.INCOMPLETE,
                              extra=with_extra(None, trial_name=folder.name))  # fmt: skip
            else:
                try:
                    trial = trial_from_result(result, reward_range or REWARD_RANGE)
                except ValueError as exc:
                    raise UserError(f"{folder / 'result.json'}: {exc}") from None
            trial.attempt = attempts[trial.task_id]
            attempts[trial.task_id] += 1
            found = files.harbor_trial_files(folder)
            if trial.tests is None:
                trial.tests = (result or {}).get("tests") if _is_tests((result or {}).get("tests")) else found.tests
            if found.left_out:
                trial.extra = with_extra(trial.extra, files_left_out=found.left_out)
            if found.files:
                trial.extra = with_extra(trial.extra, files=sorted(found.files))
                kept[(trial.task_id, trial.attempt)] = found.files
            yield trial_row(run_id, trial)

    def attach(conn: Any, run_id: int) -> None:
        ids = ledger.trial_ids(conn, run_id)
        ledger.insert_artifacts(conn, ((ids[key], n, text) for key, named in kept.items() for n, text in named.items()))

    config = _load(jobs[0] / "config.json") if (jobs[0] / "config.json").is_file() else {}
    if len(jobs) > 1:
        config = {"jobs": [str(job) for job in jobs]}
    if reward_range:
        config = {**config, "reward_range": list(reward_range)}
    run = Run(name=name, kind="eval", source=str(jobs[0] if len(jobs) == 1 else jobs[0].parent),
              stack=_stack(jobs[0], first), config=config)  # fmt: skip
    return name, import_run(ledger, run, rows, replace=replace, after=attach)


def _system(result: dict[str, Any]) -> str:
    """The agent (and its model) a trial result names: `name version (model)`."""
    info = result.get("agent_info") or {}
    model = (info.get("model_info") or {}).get("name")
    words = [
        str(info.get("name") or "unknown agent"),
        *([str(info["version"])] if info.get("version") not in (None, "", "unknown") else []),
    ]
    return " ".join(words) + (f" ({model})" if model else "")


def _warn_if_mixed(run: str, results: list[dict[str, Any]]) -> None:
    """One line when the trials of one run come from different agents or models: their attempts would be pooled as one
    system's (pass@k, compare), and the run's stack names only the first."""
    systems = Counter(_system(r) for r in results)
    if len(systems) > 1:
        shown = ", ".join(f"{s}: {n}" for s, n in systems.most_common())
        message = (f"run '{run}' mixes {len(systems)} agents/models ({shown}) as attempts of one system; "
                   "leave out --run to import each job as its own run")  # fmt: skip
        warnings.warn(message, InputWarning, stacklevel=2)


def _task_of_config(config: dict[str, Any]) -> str | None:
    """A started trial's task from its config.json (`task.path`'s last part), when result.json was never written."""
    task = config.get("task")
    path = task.get("path") if isinstance(task, dict) else None
    return Path(path).name if isinstance(path, str) and path else None


def _is_tests(value: Any) -> bool:
    """A `tests` value in trialbook's own result.json: {group: {test: status}}."""
    return isinstance(value, dict) and all(
        isinstance(g, dict) and all(isinstance(s, str) for s in g.values()) for g in value.values()
    )

"""What a run was asked to do (`RunConfig`, stored on the run), one planned trial (`PlannedTrial`), and the tally."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from trialbook.harness.run.paths import DEFAULT_RUNS_DIR, RunPaths
from trialbook.tasks import TaskError, TaskSpec, load_tasks


class RunConfig(BaseModel):
    """What `run` was asked to do; stored on the run so `resume` and `rerun` can do it again."""

    tasks_dir: str
    agent: str
    attempts: int = Field(1, ge=1)
    concurrency: int = Field(1, ge=1)
    timeout_multiplier: float = Field(1.0, gt=0, allow_inf_nan=False)  # stored: strict JSON
    deadline_minutes: float | None = Field(None, gt=0, allow_inf_nan=False)
    retries: int = Field(2, ge=0)
    backoff_s: float = Field(2.0, ge=0, allow_inf_nan=False)
    tasks: list[str] | None = None
    runs_dir: str = str(DEFAULT_RUNS_DIR)
    agent_options: dict[str, Any] = Field(default_factory=dict)  # e.g. the mini agent's endpoints
    warm_pool: bool = True  # containers started ahead of need (sandbox/warm.py)
    runtime: str = "auto"  # the containers' OCI runtime (Backend.runtime_for)
    backend: str = "docker"  # where sandboxes run (sandbox/backend.py's registry): resume and rerun use it too
    engines: list[str] = Field(default_factory=list)  # --engine URL[=N]: the endpoints (harness/placement/fleet.py)
    stop_after_errors: int = Field(5, ge=0)  # the same infra error on this many trials in a row stops the run; 0: never
    progress_every_s: float = Field(30.0, gt=0, allow_inf_nan=False)  # a progress line when stderr is not a terminal
    # a reward-hacking signature on a rewarded trial: its training reward 0 ("zero") or a tag only (rewards.py)
    hack_policy: Literal["zero", "tag"] = "zero"

    def paths(self, run_name: str) -> RunPaths:
        return RunPaths.of(self.runs_dir, run_name)

    def load_tasks(self) -> tuple[list[TaskSpec], list[TaskError]]:
        return load_tasks(Path(self.tasks_dir), self.tasks)


@dataclass
class PlannedTrial:
    task: TaskSpec | TaskError
    attempt: int
    supersedes: int | None = None
    supersedes_name: str | None = None  # its folder moves to RunPaths.superseded


@dataclass
class Tally:
    total: int
    done: int = 0
    resolved: int = 0
    errors: int = 0
    interrupted: bool = False
    deadline_hit: bool = False
    folder_warnings: int = 0  # trials recorded whose folder could not be written (full --runs-dir)
    folders_restored: int = 0  # `resume`: trial folders written again from the ledger (trial_writer.restore_folders)
    infra: int = 0  # trials that ended infra_error (`run` then exits 1: docs/reference/output.md)

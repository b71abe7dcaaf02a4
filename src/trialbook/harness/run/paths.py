"""Where a run's files live, spelled once: `runs/<run>/<trial>/...` in Harbor's job-folder layout.

runs/<run>/.lock                      one executing process per run (harness/run/lock.py)
runs/<run>/tb-<...>/result.json       Harbor-shaped TrialResult (`trialbook import harbor` reads it)
runs/<run>/tb-<...>/agent/log.txt     the agent's log, plus any files the agent keeps
runs/<run>/tb-<...>/verifier/test-stdout.txt, verifier/reward.txt
runs/<run>.superseded/tb-<...>/       trials replaced by `rerun` (runs/<run>/ stays the current view)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from trialbook.names import check_run_name

DEFAULT_RUNS_DIR = Path("runs")  # --runs-dir
TRIAL_PREFIX = "tb-"  # container names and trial folder names (harness/trial/execution.py trial_name)


@dataclass(frozen=True)
class TrialPaths:
    """The files of one trial folder."""

    folder: Path

    @property
    def agent_dir(self) -> Path:
        return self.folder / "agent"

    @property
    def verifier_dir(self) -> Path:
        return self.folder / "verifier"

    @property
    def agent_log(self) -> Path:
        return self.agent_dir / "log.txt"

    @property
    def verifier_log(self) -> Path:
        return self.verifier_dir / "test-stdout.txt"

    @property
    def reward(self) -> Path:
        return self.verifier_dir / "reward.txt"

    @property
    def result(self) -> Path:
        return self.folder / "result.json"

    def agent_file(self, name: str) -> Path:
        return self.agent_dir / name


@dataclass(frozen=True)
class RunPaths:
    """The folder of one run under a runs directory (the name is checked: no path leaves `runs_dir`)."""

    runs_dir: Path
    run: str

    def __post_init__(self) -> None:
        check_run_name(self.run)

    @classmethod
    def of(cls, runs_dir: str | Path, run: str) -> RunPaths:
        return cls(Path(runs_dir), run)

    @property
    def folder(self) -> Path:
        return self.runs_dir / self.run

    @property
    def lock(self) -> Path:
        return self.folder / ".lock"

    @property
    def superseded(self) -> Path:
        return self.runs_dir / f"{self.run}.superseded"

    def trial(self, name: str) -> TrialPaths:
        return TrialPaths(self.folder / name)

    def trial_folders(self) -> Iterator[Path]:
        return self.folder.glob(TRIAL_PREFIX + "*")


def unwritable(folder: Path) -> str | None:
    """Why no run folder can be made at or under `folder` (it, or its nearest existing parent, is a file, on a
    read-only file system or not writable), or None. Asked before a run writes anything, ledger included."""
    here = folder.absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    if not here.is_dir():
        return f"{here} is a file, not a folder" if here == folder.absolute() else f"{here} is a file"
    if os.access(here, os.W_OK | os.X_OK):
        return None
    if os.statvfs(here).f_flag & os.ST_RDONLY:
        return f"{here} is on a read-only file system"
    return f"{here} is not writable (permission denied)"


def run_folders(config: dict[str, object], run: str) -> list[Path]:
    """The folders named after a run the harness made (its config keeps the absolute `runs_dir`:
    harness/run/lifecycle.py, harness/workflows/validate.py, rl/rollout.py); none for an imported run."""
    runs_dir = config.get("runs_dir")
    if not isinstance(runs_dir, str):
        return []
    paths = RunPaths.of(runs_dir, run)
    return [paths.folder, paths.superseded]

"""What a Harbor trial folder holds besides result.json, and which folders are jobs at all.

Harbor's trial folder (harbor.models.trial.paths.TrialPaths): `agent/` (the agent's logs; its
trajectory in Harbor's ATIF format at `agent/trajectory.json`), `verifier/` (`test-stdout.txt`,
`test-stderr.txt`, `reward.txt` / `reward.json`, and per-test results such as pytest's CTRF report
`ctrf.json` where the task's test.sh writes one), `artifacts/`, `config.json`, `result.json`,
`exception.txt`, `trial.log`. Text files are kept as artifacts under their path in the folder; a
diff among them is also kept as `patch.diff`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialbook.errors import UserError

KEPT_DIRS = ("agent", "verifier", "artifacts")
KEPT_FILES = ("exception.txt", "trial.log", "patch.diff")
FILE_LIMIT = 2_000_000  # characters of one file kept; a longer log keeps its tail, other long files are left out
TRIAL_LIMIT = 20_000_000  # characters kept per trial
LOG_SUFFIXES = (".txt", ".log", ".out", ".err")
PATCH_SUFFIXES = (".diff", ".patch")
CTRF_STATUS = {"passed": "pass", "failed": "fail", "other": "error"}  # skipped / pending: not run, not counted


@dataclass
class HarborTrialFiles:
    files: dict[str, str] = field(default_factory=dict)  # artifact name (path in the trial folder) -> text
    left_out: list[str] = field(default_factory=list)  # binary, or too long
    tests: dict[str, dict[str, str]] | None = None


def _json_keys(path: Path) -> dict[str, Any] | None:
    """The object in a JSON file; {} when missing or not an object, None when unreadable."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else {}


def is_trial_folder(folder: Path) -> bool:
    """Harbor writes config.json (with trial_name) when a trial starts and result.json (task_name) at its end.
    An unreadable result.json counts (the import then says what is wrong with it)."""
    result = _json_keys(folder / "result.json")
    return result is None or "task_name" in result or "trial_name" in (_json_keys(folder / "config.json") or {})


def is_job(folder: Path) -> bool:
    return folder.is_dir() and any(is_trial_folder(p) for p in folder.iterdir() if p.is_dir())


def jobs_in(path: Path) -> list[Path]:
    """[path] for a job folder, its jobs for a folder of jobs; else one clear line."""
    if not path.is_dir():
        raise UserError(f"no such job directory: {path}")
    if is_job(path):
        return [path]
    subs = sorted(p for p in path.iterdir() if p.is_dir())
    jobs = [p for p in subs if is_job(p)]
    if jobs:
        return jobs
    if any((p / "task.toml").is_file() for p in subs):
        raise UserError(f"{path}: a folder of task folders (task.toml), not a Harbor job: `trialbook run` runs them")
    raise UserError(f"{path}: not a Harbor job (no trial folder with result.json or config.json) nor a folder of jobs")


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def ctrf_tests(text: str) -> dict[str, dict[str, str]] | None:
    """A CTRF report's tests ({"results": {"tests": [{"name", "status"}]}}) as one `tests` group."""
    try:
        tests = json.loads(text)["results"]["tests"]
        out = {str(t["name"]): CTRF_STATUS[t["status"]] for t in tests if t.get("status") in CTRF_STATUS}
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return {"tests": out} if out else None


def harbor_trial_files(folder: Path) -> HarborTrialFiles:
    found = HarborTrialFiles()
    paths = [folder / name for name in KEPT_FILES if (folder / name).is_file()]
    for sub in KEPT_DIRS:
        if (folder / sub).is_dir():
            paths += sorted(p for p in (folder / sub).rglob("*") if p.is_file() and not p.is_symlink())
    total = 0
    for path in paths:
        name = path.relative_to(folder).as_posix()
        text = _text(path)
        if text is None:
            found.left_out.append(f"{name} (binary)")
            continue
        if len(text) > FILE_LIMIT:
            if not path.name.endswith(LOG_SUFFIXES):
                found.left_out.append(f"{name} ({len(text)} characters)")
                continue
            text = text[-FILE_LIMIT:]
        if total + len(text) > TRIAL_LIMIT:
            found.left_out.append(f"{name} (the trial's {TRIAL_LIMIT} characters were kept)")
            continue
        total += len(text)
        found.files[name] = text
        if path.name == "ctrf.json" and found.tests is None:
            found.tests = ctrf_tests(text)
        if path.suffix in PATCH_SUFFIXES and "patch.diff" not in found.files and text.strip():
            found.files["patch.diff"] = text
    return found

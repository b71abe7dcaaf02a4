"""What the SWE-bench harness itself writes: `run_evaluation`'s report and its per-instance log folders.

- The run report `<model>.<run_id>.json` (swebench.harness.reporting.make_run_report): id lists
  `resolved_ids`, `unresolved_ids`, `empty_patch_ids`, `error_ids`, `incomplete_ids` (+ counts,
  `submitted_ids`, `completed_ids`, `schema_version`). `REPORT_FIELDS` maps each list to an outcome.
- The log folder `logs/run_evaluation/<run_id>/<model>/<instance_id>/` with `report.json`,
  `test_output.txt`, `patch.diff`, `run_instance.log`. Read alone, each instance gets the verdict
  make_run_report would give it: a report.json that says resolved or not, else an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.outcomes import Outcome


@dataclass(frozen=True)
class ReportRule:
    outcome: Outcome
    reward: float | None
    tag: str | None  # kept in the trial's exception column, so `show` counts it
    meaning: str


# In precedence order: the harness puts an id in one list, but a hand-merged report may not.
REPORT_FIELDS: dict[str, ReportRule] = {
    "resolved_ids": ReportRule(Outcome.RESOLVED, 1.0, None, "report.json says resolved"),
    "unresolved_ids": ReportRule(Outcome.UNRESOLVED, 0.0, None, "report.json says not resolved"),
    "empty_patch_ids": ReportRule(Outcome.UNRESOLVED, 0.0, "empty_patch", "the prediction's patch was empty: graded 0"),
    "error_ids": ReportRule(
        Outcome.INFRA_ERROR, None, "harness_error", "the harness wrote no readable report.json (build, apply, timeout)"
    ),
    "incomplete_ids": ReportRule(Outcome.INCOMPLETE, None, "no_prediction", "in the dataset, no prediction submitted"),
}
RUN_EVALUATION = Path("logs") / "run_evaluation"


def is_report(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("resolved_ids"), list)


def report_verdicts(data: dict[str, Any], where: Path) -> dict[str, str]:
    """instance id -> the REPORT_FIELDS list it is in (first in precedence order)."""
    out: dict[str, str] = {}
    for field in REPORT_FIELDS:
        ids = data.get(field, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise UserError(f"{where}: '{field}' must be a list of instance ids")
        for instance_id in ids:
            out.setdefault(instance_id, field)
    if not out:
        raise UserError(f"{where}: the SWE-bench report lists no instances")
    return out


def _instance_folders(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and any((p / n).is_file() for n in LOG_MARKERS))


LOG_MARKERS = ("report.json", "patch.diff", "run_instance.log", "test_output.txt")


def model_folder(path: Path) -> Path:
    """The `<model>` folder of a log tree given as it, or as `logs/run_evaluation[/<run_id>]` holding one model."""
    folder = path
    for _ in range(3):
        if _instance_folders(folder):
            return folder
        subs = [p for p in folder.iterdir() if p.is_dir()]
        if len(subs) != 1:
            break
        folder = subs[0]
    raise UserError(
        f"{path}: not a SWE-bench log folder (logs/run_evaluation/<run_id>/<model>/<instance_id>/report.json)"
    )


def logs_beside(report: Path) -> Path | None:
    """`logs/run_evaluation/<run_id>/<model>/` next to the report `<model>.<run_id>.json` (where the harness
    writes both), trying each dot as the split (a model or run id may contain dots)."""
    stem = report.name.removesuffix(".json")
    for k in range(len(stem)):
        if stem[k] == ".":
            model, run_id = stem[:k], stem[k + 1 :]
            folder = report.parent / RUN_EVALUATION / run_id / model
            if folder.is_dir():
                return folder
    return None


def report_of(folder: Path, instance_id: str) -> dict[str, Any] | None:
    """The instance's entry in its report.json; None when missing, empty or unreadable (the harness's error)."""
    path = folder / instance_id / "report.json"
    try:
        entry = json.loads(path.read_text()).get(instance_id)
    except (OSError, ValueError, AttributeError):
        return None
    return entry if isinstance(entry, dict) and isinstance(entry.get("resolved"), bool) else None


def logs_verdicts(folder: Path) -> dict[str, str]:
    """instance id -> REPORT_FIELDS list, for each instance folder, as make_run_report decides it."""
    out: dict[str, str] = {}
    for sub in _instance_folders(folder):
        entry = report_of(folder, sub.name)
        patch = sub / "patch.diff"
        if entry is None and patch.is_file() and not patch.read_text(errors="replace").strip():
            out[sub.name] = "empty_patch_ids"
        elif entry is None:
            out[sub.name] = "error_ids"
        else:
            out[sub.name] = "resolved_ids" if entry["resolved"] else "unresolved_ids"
    return out


def run_name_of(source: Path, folder: Path | None) -> str:
    """`<model>.<run_id>` of a report file, or of a log folder's `<run_id>/<model>`."""
    if source.is_file():
        return source.name.removesuffix(".json")
    assert folder is not None
    return f"{folder.name}.{folder.parent.name}" if folder.parent.parent.name == "run_evaluation" else folder.name

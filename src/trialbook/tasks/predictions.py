"""SWE-bench predictions files: what `trialbook grade` grades.

The harness's format (swebench.harness.run_evaluation --predictions_path): JSONL, or a JSON list, of
{"instance_id", "model_patch", "model_name_or_path"}; a JSON object {instance_id: prediction} is read
too. A null or empty `model_patch` is an empty patch (graded as the untouched task).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.files import json_lines


@dataclass(frozen=True)
class Predictions:
    patches: dict[str, str]  # instance_id -> model_patch ("" when empty)
    models: list[str]  # the model_name_or_path values, sorted


def _rows(path: Path) -> list[tuple[str, Any]]:
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    text = path.read_text(errors="replace").lstrip()
    if text.startswith("[") or (text.startswith("{") and "\n{" not in text.strip()):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UserError(f"{path}: not valid JSON ({exc})") from None
        if isinstance(data, dict) and "instance_id" not in data:  # {instance_id: prediction}
            data = [{"instance_id": k, **v} if isinstance(v, dict) else v for k, v in data.items()]
        items = data if isinstance(data, list) else [data]
        return [(f"item {n}", item) for n, item in enumerate(items, 1)]
    return [(f"line {n}", obj) for n, obj in json_lines(path, prefix=f"{path}: ")]


def read_predictions(path: Path) -> Predictions:
    patches: dict[str, str] = {}
    models: set[str] = set()
    for where, obj in _rows(path):
        if not isinstance(obj, dict) or not isinstance(obj.get("instance_id"), str):
            raise UserError(f"{path}: {where}: a prediction needs an 'instance_id' (and a 'model_patch')")
        patch = obj.get("model_patch")
        if patch is not None and not isinstance(patch, str):
            raise UserError(f"{path}: {where}: model_patch must be text (a diff) or null")
        if obj["instance_id"] in patches:
            raise UserError(f"{path}: {where}: a second prediction for {obj['instance_id']}")
        patches[obj["instance_id"]] = patch or ""
        if isinstance(obj.get("model_name_or_path"), str):
            models.add(obj["model_name_or_path"])
    if not patches:
        raise UserError(f"{path}: no predictions")
    return Predictions(patches, sorted(models))

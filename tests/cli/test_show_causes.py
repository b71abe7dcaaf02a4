"""`show --json` counts why trials ended: the exception kind and its message's first line (`trials RUN` has each
trial's)."""

from __future__ import annotations

import json
from pathlib import Path


def test_show_json_and_table_have_the_causes(cli, tmp_path: Path) -> None:
    rows = [
        {"task_id": "a__b-1", "outcome": "infra_error", "exception": "EndpointError",
         "exception_message": "model endpoint answered 404: model 'step-200' not found\nbody: ..."},
        {"task_id": "a__b-2", "outcome": "infra_error", "exception": "EndpointError",
         "exception_message": "model endpoint answered 404: model 'step-200' not found\nother body"},
        {"task_id": "a__b-3", "outcome": "infra_error", "exception": "KeyError", "exception_message": "'x'"},
        {"task_id": "a__b-4", "outcome": "resolved"},
    ]  # fmt: skip
    src = tmp_path / "r.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(src), "--run", "r").exit_code == 0
    res = cli("show", "r", "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["causes"] == [
        {"exception": "EndpointError", "cause": "model endpoint answered 404: model 'step-200' not found", "trials": 2},
        {"exception": "KeyError", "cause": "'x'", "trials": 1},
    ]
    src.write_text(json.dumps(rows[-1]) + "\n")
    assert cli("import", "jsonl", str(src), "--run", "clean").exit_code == 0
    assert json.loads(cli("show", "clean", "--json").stdout)["causes"] == []

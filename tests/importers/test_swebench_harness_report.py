"""`import swebench` of what the SWE-bench harness writes: its run report and its log folder.

The report is built by the harness's own code (swebench.harness.reporting.make_run_report) from the
50 logged instances of the sweagent-claude3.5 submission, laid out as run_evaluation lays them out,
plus two predictions with empty patches (no_generation in that submission) and one instance with none.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from paths import INSTANCES, SWE

LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
MODEL, RUN_ID = "sweagent-claude3.5", "w43.check"
LOGGED = sorted(p.name for p in LOGS.iterdir() if p.is_dir())
NO_GENERATION = json.loads((LOGS / "results.json").read_text())["no_generation"][:2]
NOT_SUBMITTED = "django__django-11099"  # in Verified, neither logged nor no_generation


def _report_json_verdicts() -> dict[str, bool]:
    out = {}
    for instance_id in LOGGED:
        path = LOGS / instance_id / "report.json"
        if path.is_file():
            out[instance_id] = json.loads(path.read_text())[instance_id]["resolved"]
    return out


@pytest.fixture(scope="module")
def harness_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report file, with logs/run_evaluation/<run_id>/<model>/ beside it, as run_evaluation leaves them."""
    reporting = pytest.importorskip("swebench.harness.reporting")
    tmp_path = tmp_path_factory.mktemp("harness")
    folder = tmp_path / "logs" / "run_evaluation" / RUN_ID / MODEL
    for instance_id in LOGGED:
        shutil.copytree(LOGS / instance_id, folder / instance_id, ignore=shutil.ignore_patterns("eval.sh"))
    predictions = {
        i: {"instance_id": i, "model_name_or_path": MODEL, "model_patch": (LOGS / i / "patch.diff").read_text()}
        for i in LOGGED
    }
    predictions.update({i: {"instance_id": i, "model_name_or_path": MODEL, "model_patch": ""} for i in NO_GENERATION})
    dataset = [{"instance_id": i} for i in [*predictions, NOT_SUBMITTED]]
    here = os.getcwd()
    os.chdir(tmp_path)  # the harness writes the report, and reads the logs, relative to the cwd
    try:
        path = tmp_path / reporting.make_run_report(predictions, dataset, RUN_ID)
    finally:
        os.chdir(here)
    assert path.name == f"{MODEL}.{RUN_ID}.json"
    return path


def _show(cli, run: str) -> dict:
    res = cli("show", run, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_official_report_maps_every_list_to_an_outcome(cli, db, harness_run: Path):
    report = json.loads(harness_run.read_text())
    assert NOT_SUBMITTED not in LOGGED + NO_GENERATION and report["incomplete_ids"] == [NOT_SUBMITTED]
    verdicts = _report_json_verdicts()
    resolved = sorted(i for i, ok in verdicts.items() if ok)
    assert report["resolved_ids"] == resolved and len(report["error_ids"]) == len(LOGGED) - len(verdicts) == 3
    res = cli("import", "swebench", str(harness_run), "--instances", str(INSTANCES))
    assert res.exit_code == 0, res.stderr
    assert f"imported {len(LOGGED) + 3} trials into run '{MODEL}.{RUN_ID}'" in res.stderr
    s = _show(cli, f"{MODEL}.{RUN_ID}")
    unresolved = len(verdicts) - len(resolved)
    assert s["trials"] == len(LOGGED) + 3
    assert s["outcomes"] == {
        "unresolved": unresolved + 2, "resolved": len(resolved), "infra_error": 3, "incomplete": 1,
    }  # fmt: skip
    assert (s["judged"], s["resolved"]) == (len(verdicts) + 2, len(resolved))
    assert s["tags"] == {"harness_error": 3, "empty_patch": 2, "no_prediction": 1}

    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    run = ledger.get_run(f"{MODEL}.{RUN_ID}")
    assert run.stack["source_kind"] == "harness report"
    trials = {t.task_id: t for t in ledger.trial_rows(run.id)}
    assert trials["django__django-15375"].outcome == "infra_error"
    assert ledger.artifact(trials["django__django-15375"].id, "run_instance.log")  # why it errored, kept
    assert {trials[i].reward for i in NO_GENERATION} == {0.0}
    t = trials["psf__requests-2317"]
    assert ledger.artifact(t.id, "test_output.txt") == (LOGS / "psf__requests-2317" / "test_output.txt").read_text()
    assert ledger.artifact(t.id, "patch.diff") == (LOGS / "psf__requests-2317" / "patch.diff").read_text()
    assert t.tests and all(v == "pass" for v in t.tests["FAIL_TO_PASS"].values())
    assert trials["pallets__flask-5014"].repo == "pallets/flask"


def test_log_folder_alone_gives_the_reports_verdicts(cli, harness_run: Path):
    """The folder without the report: each instance as make_run_report judges it."""
    for given in (harness_run.parent / "logs" / "run_evaluation", harness_run.parent / "logs" / "run_evaluation" /
                  RUN_ID / MODEL):  # fmt: skip
        res = cli("import", "swebench", str(given), "--run", "from-logs", "--replace")
        assert res.exit_code == 0, res.stderr
        s = _show(cli, "from-logs")
        verdicts = _report_json_verdicts()
        assert s["trials"] == len(LOGGED)
        assert s["outcomes"]["resolved"] == sum(verdicts.values()) and s["outcomes"]["infra_error"] == 3


def test_report_agrees_with_the_leaderboard_file_on_its_instances(cli, harness_run: Path):
    published = set(json.loads((LOGS / "results.json").read_text())["resolved"])
    report = json.loads(harness_run.read_text())
    assert set(report["resolved_ids"]) == published & set(LOGGED)


def test_bad_reports_and_folders_are_one_line(cli, tmp_path: Path):
    bad = tmp_path / "m.r.json"
    bad.write_text(json.dumps({"resolved_ids": ["a__b-1"], "error_ids": "a__b-2"}))
    res = cli("import", "swebench", str(bad))
    assert res.exit_code == 2 and "'error_ids' must be a list" in res.stderr and res.stderr.count("\n") == 1
    empty = tmp_path / "e.r.json"
    empty.write_text(json.dumps({"resolved_ids": []}))
    assert "lists no instances" in cli("import", "swebench", str(empty)).stderr
    (tmp_path / "nothing" / "here").mkdir(parents=True)
    res = cli("import", "swebench", str(tmp_path / "nothing"))
    assert res.exit_code == 2 and "not a SWE-bench log folder" in res.stderr
    board = tmp_path / "board.json"
    board.write_text(json.dumps({"resolved": ["django__django-11099"]}))
    res = cli("import", "swebench", str(board))
    assert res.exit_code == 2 and "needs --instances" in res.stderr
    stranger = tmp_path / "s.r.json"
    stranger.write_text(json.dumps({"resolved_ids": ["not__an-instance-1"]}))
    res = cli("import", "swebench", str(stranger), "--instances", str(INSTANCES))
    assert res.exit_code == 2 and "not in" in res.stderr
    assert json.loads(cli("runs", "--json").stdout) == []

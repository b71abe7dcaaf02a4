"""Run names are checked at every entry point: a name can never become a path outside --runs-dir."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from trialbook.errors import UserError
from trialbook.harness.run.paths import RunPaths
from trialbook.ledger.store import Ledger
from trialbook.names import check_run_name, safe_name
from trialbook.records import Run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
BAD = ["/abs/dir", "../runsA/other", "a/b", "..", "x..y", ".hidden", "", "a" * 129, "r.superseded", "sp ace", "ü"]


@pytest.mark.parametrize("name", BAD)
def test_bad_names_refused(name):
    with pytest.raises(UserError, match="invalid run name"):
        check_run_name(name)
    with pytest.raises(UserError):
        RunPaths.of("/tmp/runs", name)


@pytest.mark.parametrize("name", ["a", "run-1", "gpt4o_2025.06.01", "x+y=z@host", "_x", "a" * 128])
def test_good_names_pass(name):
    assert check_run_name(name) == name
    assert RunPaths.of("/tmp/runs", name).folder.parent == Path("/tmp/runs")


@pytest.mark.parametrize("text", ["/abs/dir", "../x", "my job (copy)", "..", "", "r.superseded", "-x"])
def test_safe_name_is_always_valid(text):
    assert check_run_name(safe_name(text))


def test_ledger_refuses_a_bad_name(db):
    ledger = Ledger(db)
    with pytest.raises(UserError), ledger.transaction() as conn:
        ledger.create_run(conn, Run(name="../escape", kind="eval"))
    assert ledger.run_names() == []


def _sentinel(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    (victim / "tb-old-trial").mkdir(parents=True)
    (victim / "keep.txt").write_text("precious")
    (victim / "tb-old-trial" / "result.json").write_text("{}")
    return victim


def _untouched(victim: Path) -> None:
    assert (victim / "keep.txt").read_text() == "precious"
    assert (victim / "tb-old-trial" / "result.json").is_file()


def test_every_entry_point_refuses_traversal(tmp_path, cli):
    victim = _sentinel(tmp_path)
    runs_b = tmp_path / "runsB"
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(json.dumps({"task_id": "t", "attempt": 0, "outcome": "resolved", "reward": 1.0}) + "\n")
    harbor = tmp_path / "job"
    harbor.mkdir()
    for name in [str(victim), "../victim", f"../{victim.name}/x"]:
        commands = [
            ["run", str(EXAMPLES), "--agent", "nop", "--run", name, "--runs-dir", str(runs_b), "--replace"],
            ["validate", str(EXAMPLES), "--run", name, "--runs-dir", str(runs_b), "--replace"],
            ["import", "jsonl", str(jsonl), "--run", name, "--replace"],
            ["import", "steps", str(jsonl), "--run", name],
            ["import", "harbor", str(harbor), "--run", name, "--replace"],
            ["import", "swebench", str(jsonl), "--instances", str(jsonl), "--run", name, "--replace"],
            ["resume", name],
            ["rerun", name, "--where", "infra_error"],
            ["clean", "--run", name],
            ["show", name],
            ["export", name, "--jsonl", str(tmp_path / "out.jsonl")],
            ["audit", name],
            ["regrade", name],
            ["train", "report", name],
        ]
        for args in commands:
            res = cli(*args, use_db=args[0] != "clean")
            assert res.exit_code == 2, (args, res.stdout, res.stderr)
            assert "invalid run name" in res.stderr, args
            assert len(res.stderr.strip().splitlines()) == 1, args
    _untouched(victim)
    assert not runs_b.exists() or not any(runs_b.iterdir())
    assert not (tmp_path / "out.jsonl").exists()


def test_the_real_cli_prints_one_line(tmp_path):
    victim = _sentinel(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", "from trialbook.cli import main; main()", "run", str(EXAMPLES), "--agent", "nop",
         "--run", str(victim), "--replace", "--db", str(tmp_path / "l.db"), "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: invalid run name") and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    _untouched(victim)

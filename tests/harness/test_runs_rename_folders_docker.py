"""`runs rename` / `runs delete` of a run made by `trialbook run` (real Docker): the run's folders
under --runs-dir follow its name, so `resume` and `rerun` under the new name find them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialbook.errors import TrialbookError
from trialbook.ledger.admin import rename_run
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"


def _folders(runs: Path) -> list[str]:
    return sorted(p.name for p in runs.iterdir())


def test_rename_moves_the_trial_folders_and_resume_finds_them(engine, cli, db, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    res = cli(
        "run", str(EXAMPLES), "--agent", "oracle", "--run", "o", "--tasks", "plain-bugfix", "--runs-dir", str(runs)
    )
    assert res.exit_code == 0, res.stderr
    assert cli("rerun", "o", "--where", "resolved").exit_code == 0  # the first trial's folder goes to o.superseded
    assert _folders(runs) == ["o", "o.superseded"]
    (first,) = [p.name for p in (runs / "o.superseded").iterdir()]
    (current,) = [p.name for p in (runs / "o").glob("tb-*")]

    res = cli("runs", "rename", "o", "o2")
    assert res.exit_code == 0, res.stderr
    assert f"moved its folder to {runs / 'o2'}" in res.stderr
    assert _folders(runs) == ["o2", "o2.superseded"]
    assert (runs / "o2" / current / "result.json").is_file() and (runs / "o2.superseded" / first).is_dir()

    # the harness finds the run's folder under its new name: a rerun moves the current trial aside again
    res = cli("rerun", "o2", "--where", "resolved")
    assert res.exit_code == 0, res.stderr
    assert _folders(runs) == ["o2", "o2.superseded"]
    assert sorted(p.name for p in (runs / "o2.superseded").iterdir()) == sorted([first, current])
    assert cli("resume", "o2").exit_code == 0
    assert json.loads(cli("show", "o2", "--json").stdout)["superseded"] == 2

    # a move that fails midway (the second destination's parent does not exist) changes nothing
    ledger = Ledger(db)
    with pytest.raises(TrialbookError, match="cannot move .*; nothing was renamed"):
        moves = [(runs / "o2", runs / "o3"), (runs / "o2.superseded", tmp_path / "gone" / "o3.superseded")]
        rename_run(ledger, "o2", "o3", folders=moves)
    assert _folders(runs) == ["o2", "o2.superseded"] and ledger.run_names() == ["o2"]

    res = cli("runs", "rename", "o2", "o3")
    assert res.exit_code == 0 and _folders(runs) == ["o3", "o3.superseded"]
    (runs / "o4").mkdir()
    res = cli("runs", "rename", "o3", "o4")  # the folder it would move to is taken: refused, nothing changed
    assert res.exit_code == 2 and "already exists" in res.stderr and Ledger(db).run_names() == ["o3"]
    res = cli("runs", "delete", "o3")
    assert res.exit_code == 0 and f"removed {runs / 'o3'}" in res.stderr
    assert _folders(runs) == ["o4"]


def test_a_validate_run_keeps_where_its_folders_are(engine, cli, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    res = cli("validate", str(EXAMPLES), "--tasks", "plain-bugfix", "--repeats", "1", "--run", "val",
              "--runs-dir", str(runs), "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert len(list((runs / "val").glob("tb-*"))) == 2  # oracle and nop
    res = cli("runs", "rename", "val", "val2")
    assert res.exit_code == 0 and f"moved its folder to {runs / 'val2'}" in res.stderr
    assert _folders(runs) == ["val2"] and len(list((runs / "val2").glob("tb-*"))) == 2

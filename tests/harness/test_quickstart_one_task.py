"""quickstart compares two agents task by task: a tasks folder with one task is refused before any trial runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from paths import EXAMPLES
from trialbook.ledger.store import Ledger


def test_one_task_is_refused_before_running(cli, db: str, tmp_path: Path) -> None:
    one = tmp_path / "tasks"
    one.mkdir()
    shutil.copytree(EXAMPLES / "plain-bugfix", one / "plain-bugfix")
    res = cli("quickstart", "--tasks-dir", str(one))
    assert res.exit_code == 2
    assert res.stderr == f"error: quickstart compares two agents task by task and needs 2+ tasks; {one} has 1\n"
    assert Ledger(db).run_names() == []  # nothing was run or recorded

"""`import harbor FOLDER --run NAME` over jobs of different agents pools them as attempts of one system: the command
says so in one warning line (through the real entry point, which prints warnings as `warning: ...`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import HARBOR_JOBS

MAIN = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def test_a_run_of_several_agents_is_imported_with_one_warning(tmp_path: Path) -> None:
    db = str(tmp_path / "l.db")
    res = subprocess.run([*MAIN, "import", "harbor", str(HARBOR_JOBS), "--run", "all-jobs", "--db", db],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    (warning,) = [line for line in res.stderr.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: run 'all-jobs' mixes 4 agents/models (") and "codex (gpt-5.2): 2" in warning
    res = subprocess.run([*MAIN, "import", "harbor", str(HARBOR_JOBS), "--db", db], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert res.returncode == 0 and "warning" not in res.stderr, res.stderr  # a run per job: one agent each

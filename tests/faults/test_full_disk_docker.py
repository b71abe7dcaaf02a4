"""Fault (c): the runs folder is a small tmpfs that fills mid-run. The run goes on (the trials are in the ledger),
says so in one line, and leaves no half-written trial folder; `resume` while it is still full stops with one line;
once space is freed, `resume` writes the missing folders again from the ledger."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import assert_whole, oracle_run, recorded, tb, wait_for

ATTEMPTS = 4


@pytest.fixture()
def small_fs(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "runs"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> Path:
    """Write zeros into `folder` until its filesystem refuses more."""
    filler = folder / "filler"
    with filler.open("wb") as fh:
        try:
            while True:
                fh.write(b"\0" * 65536)
                fh.flush()
        except OSError:
            pass
    return filler


def folders(runs: Path, run: str) -> list[Path]:
    return [p for p in (runs / run).iterdir() if p.is_dir() and p.name.startswith("tb-")]


@pytest.mark.docker
def test_a_full_runs_folder_costs_no_trial_and_resume_writes_the_folders(small_fs: Path, db: str) -> None:
    run = tb(*oracle_run("full", db, small_fs, ATTEMPTS, 2))
    try:
        wait_for(lambda: recorded(db, "full") >= 1, 120, "the first trial in the ledger")
        filler = fill(small_fs)
        assert run.wait(300) == 0, run.err
    finally:
        run.kill()
    lines = [line for line in run.lines if "No space left on device" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: trial folder not written under"), run.err
    assert run.saw("trial folder(s) not written")
    written = folders(small_fs, "full")
    assert len(written) < ATTEMPTS  # the fault did cost folders ...
    for folder in written:  # ... and left none half-written
        assert json.loads((folder / "result.json").read_text())["task_name"] == "plain-bugfix"
    assert_whole(db, "full", ATTEMPTS)  # ... and no trial

    still = tb("resume", "full", "--db", db)
    assert still.wait(120) == 1
    assert (
        still.lines[-1].startswith("error: trial folders still cannot be written under")
        and "Traceback" not in still.err
    )
    filler.unlink()
    again = tb("resume", "full", "--db", db)
    assert again.wait(120) == 0, again.err
    assert again.saw(f"{ATTEMPTS - len(written)} trial folder(s) written again from the ledger")
    assert len(folders(small_fs, "full")) == ATTEMPTS
    for folder in folders(small_fs, "full"):
        result = json.loads((folder / "result.json").read_text())
        assert result["outcome"] == "resolved" and (folder / "verifier" / "test-stdout.txt").stat().st_size > 0
    assert_whole(db, "full", ATTEMPTS)

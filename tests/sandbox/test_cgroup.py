"""The limit counters a container's last process reads from inside (sandbox/cgroup.py): run by a real shell
over files laid out as cgroup v1 and v2 show them, and parsed as the host-side reading is."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from trialbook.sandbox.cgroup import cgroup_counters, parse_report, report_script


def _run(root: Path) -> str:
    script = report_script().replace("/sys/fs/cgroup", str(root))
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


def test_v1_counters_are_read_and_parsed(tmp_path: Path) -> None:
    (tmp_path / "memory").mkdir()
    (tmp_path / "pids").mkdir()
    (tmp_path / "memory" / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (tmp_path / "pids" / "pids.events").write_text("max 0\n")
    out = _run(tmp_path)
    assert out == "oom_kills 2\npids_limit_hits 0\n"
    assert parse_report(out) == ({"oom_kills": 2}, {"oom_kills", "pids_limit_hits"})


def test_v2_counters_and_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 1\noom_kill 0\n")
    out = _run(tmp_path)  # no pids.events: that counter is not read (the daemon is asked instead)
    assert parse_report(out) == ({}, {"oom_kills"})
    (tmp_path / "pids.events").write_text("max 7\n")
    assert parse_report(_run(tmp_path)) == ({"pids_limit_hits": 7}, {"oom_kills", "pids_limit_hits"})


@pytest.mark.parametrize("line", ["oom_kills many", "surprise 3", "pids_limit_hits", ""])
def test_lines_that_are_not_counters_are_ignored(line: str) -> None:
    assert parse_report(line + "\npids_limit_hits 1\n") == ({"pids_limit_hits": 1}, {"pids_limit_hits"})


def test_inside_and_host_readings_agree_on_the_same_files(tmp_path: Path) -> None:
    cid = "c" * 64
    host = tmp_path / "host"
    (host / "memory" / "docker" / cid).mkdir(parents=True)
    (host / "pids" / "docker" / cid).mkdir(parents=True)
    (host / "memory" / "docker" / cid / "memory.oom_control").write_text("oom_kill 1\n")
    (host / "pids" / "docker" / cid / "pids.events").write_text("max 5\n")
    inside = tmp_path / "inside"
    (inside / "memory").mkdir(parents=True)
    (inside / "pids").mkdir()
    (inside / "memory" / "memory.oom_control").write_text("oom_kill 1\n")
    (inside / "pids" / "pids.events").write_text("max 5\n")
    assert parse_report(_run(inside)) == cgroup_counters(cid, root=host)

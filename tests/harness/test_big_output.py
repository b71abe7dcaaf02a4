"""A 100 MB verifier output costs disk at most, not memory: execs stream their output and only its
tail (sandbox/docker.py OUTPUT_TAIL) is held. Measured as the harness process's peak RSS."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
PEAK = (
    "import atexit, resource, sys\n"
    "atexit.register(lambda: sys.stderr.write(f'PEAK_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n'))\n"
    "from trialbook.cli import main\n"
    "main()\n"
)


def _peak_kb(tmp_path: Path, name: str, noise_mb: int) -> int:
    tasks = tmp_path / name
    shutil.copytree(EXAMPLE, tasks / "noisy")
    test_sh = tasks / "noisy" / "tests" / "test.sh"
    noise = f"head -c {noise_mb * 1_000_000} /dev/zero | tr '\\0' 'x' | fold -w 99\n" if noise_mb else ""
    test_sh.write_text(test_sh.read_text().replace("cd /testbed\n", "cd /testbed\n" + noise, 1))
    proc = subprocess.run(
        [sys.executable, "-c", PEAK, "run", str(tasks), "--agent", "oracle", "--run", name,
         "--db", str(tmp_path / f"{name}.db"), "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "1 resolved" in proc.stderr, proc.stderr
    return int(re.search(r"PEAK_KB (\d+)", proc.stderr).group(1))


def test_100mb_verifier_output_stays_under_100mb_extra_memory(engine, tmp_path):
    quiet = _peak_kb(tmp_path, "quiet", 0)
    noisy = _peak_kb(tmp_path, "noisy", 100)
    extra_mb = (noisy - quiet) / 1024
    print(f"100 MB of verifier output: {extra_mb:.0f} MB of extra peak memory")
    assert extra_mb < 100, f"100 MB of verifier output cost {extra_mb:.0f} MB of memory"
    log = next((tmp_path / "runs" / "noisy").glob("tb-*/verifier/test-stdout.txt")).read_text()
    assert "passed" in log  # the tail, with pytest's summary, is kept

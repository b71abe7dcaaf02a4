"""Fault soak: the fault tests of tests/faults/ (a PostgreSQL ledger restarted, three runs on one SQLite ledger with
a reader, a full runs folder, the run's Docker daemon restarted, its bridge deleted, a planted key) run N cycles in a
row, by hand (needs root, Docker, PostgreSQL's binaries): `python benchmarks/bench_faults.py [--cycles 5]`.

Each test ends with `trialbook ledger check`, every (task, attempt) recorded once and no container left, so a
passing cycle is 0 lost, 0 duplicated, 0 containers left for every fault. Reported per fault: cycles passed, and the
median and worst seconds; one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULT_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests" / "faults").glob("test_*_docker.py"))


def cycle(report: Path) -> dict[str, tuple[bool, float]]:
    """One pytest pass over the fault tests: test name -> (passed, seconds)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", f"--junitxml={report}",
           *FAULT_TESTS]  # fmt: skip
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    out = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        failed = any(child.tag in ("failure", "error", "skipped") for child in case)
        out[case.get("name", "?")] = (not failed, float(case.get("time", 0)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=5)
    args = parser.parse_args()
    runs: dict[str, list[tuple[bool, float]]] = {}
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tb-faults-") as tmp:
        for n in range(args.cycles):
            for name, result in cycle(Path(tmp) / f"cycle-{n}.xml").items():
                runs.setdefault(name, []).append(result)
    faults = {
        name: {"passed": sum(ok for ok, _ in results), "cycles": len(results),
               "median_s": round(statistics.median(s for _, s in results), 1),
               "worst_s": round(max(s for _, s in results), 1)}
        for name, results in sorted(runs.items())
    }  # fmt: skip
    print(json.dumps({"cycles": args.cycles, "faults": faults, "wall_s": round(time.monotonic() - t0)}, indent=1))


if __name__ == "__main__":
    main()

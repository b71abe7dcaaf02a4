"""Start-up time of the data commands (run by hand: `python benchmarks/bench_startup.py [N]`).

`trialbook runs`, `show RUN` and `compare --help` on a small ledger, each started N times (default 10)
as a fresh process, against `python -c pass` as the floor. Reports the median wall time and the
median CPU time (user + system of the child): on a loaded machine the wall time mostly measures the
queue for a core, the CPU time what the command itself costs. Target (issue 18): <= 0.3 s.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], n: int, env: dict[str, str]) -> dict[str, float]:
    walls, cpus = [], []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, env=env)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
    return {"wall_median_s": round(statistics.median(walls), 3), "cpu_median_s": round(statistics.median(cpus), 3)}


def make_ledger(db: Path, env: dict[str, str]) -> None:
    rows = [{"task_id": f"repo__repo-{i % 20}", "outcome": "resolved" if i % 3 else "unresolved"} for i in range(200)]
    src = db.parent / "trials.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("base", "cand"):
        cmd = [*trialbook(), "import", "jsonl", str(src), "--run", name, "--db", str(db)]
        subprocess.run(cmd, check=True, capture_output=True, env=env)


def trialbook() -> list[str]:
    exe = shutil.which("trialbook", path=str(Path(sys.executable).parent)) or shutil.which("trialbook")
    if exe is None:
        sys.exit("the trialbook command is not installed next to this Python")
    return [sys.executable, exe]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        make_ledger(db, env)
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "trialbook runs": [*trialbook(), "runs", "--db", str(db)],
            "trialbook show base": [*trialbook(), "show", "base", "--db", str(db)],
            "trialbook compare --help": [*trialbook(), "compare", "--help"],
        }
        out = {name: timed(cmd, n, env) for name, cmd in commands.items()}
    floor = out["python -c pass (floor)"]
    for row in out.values():
        row["wall_over_floor_s"] = round(row["wall_median_s"] - floor["wall_median_s"], 3)
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]  # type: ignore[assignment]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

"""Import 1,000,000 JSONL trials with the real CLI; report trials/s and peak memory.

Run by hand: `python benchmarks/bench_import.py [N]`. Peak memory is the largest total proportional set
size (PSS: a page shared by k processes counts 1/k in each) of the import and its forked worker
processes, sampled every 0.2 s (reading PSS costs the kernel a page-table walk: sampling more often
would slow down the import it measures).
Target (issue 2): >= 100,000 trials/s and < 1 GiB peak on a 2-core machine.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OUTCOMES = ["resolved", "unresolved", "agent_timeout", "context_overflow", "format_error", "verifier_timeout"]


def make_file(path: Path, n: int) -> None:
    rng = random.Random(0)
    tasks = [f"django__django-{10000 + i}" for i in range(500)]
    with path.open("w") as fh:
        for i in range(n):
            task = tasks[i % 500]
            row = {"task_id": task, "outcome": rng.choice(OUTCOMES), "step": i // 16000, "wv": i // 16000,
                   "epoch": i // 250000, "duration_s": round(rng.uniform(30, 900), 1),
                   "tokens": rng.randint(1000, 60000), "turns": rng.randint(3, 80)}  # fmt: skip
            fh.write(json.dumps(row) + "\n")


def tree_pss_kib(pid: int) -> int:
    """Memory of `pid` and all its descendants (PSS), in KiB (0 once it has exited)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/smaps_rollup").read_text()
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Pss:")), 0)
        todo += map(int, kids)
    return total


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    tmp = Path(tempfile.mkdtemp())
    src, db = tmp / "trials.jsonl", tmp / "bench.db"
    make_file(src, n)
    exe = shutil.which("trialbook") or "trialbook"
    cmd = [exe, "import", "jsonl", str(src), "--run", "bench", "--kind", "eval", "--db", str(db)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_pss_kib(proc.pid))
        time.sleep(0.2)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(proc.stderr.read() if proc.stderr else "import failed")
    size_mib = src.stat().st_size / 2**20
    print(f"{n:,} trials ({size_mib:.0f} MiB JSONL) in {wall:.2f} s = {n / wall:,.0f} trials/s, "
          f"peak {peak / 1024:.0f} MiB (PSS, import + workers)")  # fmt: skip
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

"""Import 1,000,000 JSONL trials with the real CLI; report trials/s and peak memory.

Run by hand: `python benchmarks/bench_import.py [N]`. Uses /usr/bin/time -v for peak RSS when present.
Target (issue 2): >= 100,000 trials/s and < 1 GiB peak on a 2-core machine.
"""

from __future__ import annotations

import json
import random
import re
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
                   "epoch": i // 250000, "duration_s": round(rng.uniform(30, 900), 1), "tokens": rng.randint(1000, 60000),
                   "turns": rng.randint(3, 80)}  # fmt: skip
            fh.write(json.dumps(row) + "\n")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    tmp = Path(tempfile.mkdtemp())
    src, db = tmp / "trials.jsonl", tmp / "bench.db"
    make_file(src, n)
    exe = shutil.which("trialbook") or "trialbook"
    cmd = [exe, "import", "jsonl", str(src), "--run", "bench", "--kind", "eval", "--db", str(db)]
    timer = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    start = time.perf_counter()
    proc = subprocess.run(timer + cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(proc.stderr)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    peak_mib = int(peak.group(1)) / 1024 if peak else float("nan")
    size_mib = src.stat().st_size / 2**20
    print(f"{n:,} trials ({size_mib:.0f} MiB JSONL) in {wall:.2f} s = {n / wall:,.0f} trials/s, peak RSS {peak_mib:.0f} MiB")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

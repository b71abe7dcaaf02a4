"""Benchmark: `trialbook serve` on a 1,000,000-trial ledger: the runs page, the run page and trial pages.

Targets (issue 16): runs page and run page < 1 s, trial page < 0.3 s. Run by hand:
    python benchmarks/bench_web.py [--db LEDGER] [--repeats 5]
Without --db it builds the import benchmark's ledger (bench_import.make_file, 1,000,000 trials in one
run, imported with the real CLI). The server is the real `trialbook serve` on 127.0.0.1; times are
HTTP round trips from this process. "first" is the first request of each page after start-up (the
server warms the counts of the first page of runs in the background from start-up on: the first
visits here wait for that scan); "repeat" is the median of the next requests, answered from the
counts cached until the run changes.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_import import make_file  # noqa: E402

N = 1_000_000
TARGETS = {"runs page": 1.0, "run page": 1.0, "trial page": 0.3}
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def build(folder: Path) -> Path:
    src, db = folder / "trials.jsonl", folder / "bench.db"
    make_file(src, N)
    subprocess.run([*CLI, "import", "jsonl", str(src), "--run", "bench", "--db", str(db)], check=True)
    src.unlink()
    return db


def get(url: str) -> float:
    start = time.perf_counter()
    with urlopen(url, timeout=120) as res:
        res.read()
        assert res.status == 200, url
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    db = args.db or build(tmp)
    proc = subprocess.Popen([*CLI, "serve", "--db", str(db), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not m:
            sys.exit(f"serve did not start: {line}")
        base = m.group(1)
        pages = {"runs page": "/", "run page": "/runs/bench", "trial page": "/trials/500000"}
        first = {name: get(base + path) for name, path in pages.items()}
        first["trial page (another)"] = get(base + "/trials/999001")
        repeat = {n: statistics.median(get(base + p) for _ in range(args.repeats)) for n, p in pages.items()}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"ledger {db} ({db.stat().st_size / 2**20:.0f} MiB)")
    print(f"{'page':<22} {'first (s)':>10} {'repeat (s)':>11} {'target':>8}")
    for name, t in first.items():
        key = name.split(" (")[0]
        rep = f"{repeat[name]:.3f}" if name in repeat else "-"
        ok = "ok" if repeat.get(name, t) < TARGETS[key] else "SLOW"
        print(f"{name:<22} {t:>10.3f} {rep:>11} {TARGETS[key]:>7.1f}s {ok}")


if __name__ == "__main__":
    main()

"""Benchmark: `trialbook serve` on the import benchmark's 1,000,000-trial ledger, page by page.

Targets (issue 16): runs page and run page < 1 s, trial page < 0.3 s, on the first visit.
Run by hand:
    python benchmarks/bench_web.py [--db LEDGER] [--repeats 5]
Without --db it builds the ledger under a temporary folder: the import benchmark's 1,000,000 trials
(bench_import.make_file) as run `bench`, plus `cand`, 10,000 trials on the same 500 tasks, so that
the compare page has a candidate; both imported with the real CLI.

Each page gets a fresh `trialbook serve` (the real server on 127.0.0.1): "first" is its first
request (nothing cached by the app), "warm" the median of the next --repeats requests. With --cold
the ledger's pages are also evicted from the OS file cache before each server starts
(posix_fadvise DONTNEED on that one file: nothing else on the machine is touched), so "first" reads
from disk. Times are HTTP round trips from this process. The load average is printed because the
machine these figures come from is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.error import HTTPError, URLError
from urllib.request import urlopen

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_import import OUTCOMES, make_file  # noqa: E402

N = 1_000_000
CAND = 10_000
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]
PAGES = {
    "runs page": ("/", 1.0),
    "run page": ("/runs/bench", 1.0),
    "trial page": ("/trials/500000", 0.3),
    "compare page": ("/compare?base=bench&cand=cand", None),
    "audit page": ("/audit?run=bench", None),
}


def build(folder: Path) -> Path:
    src, db = folder / "trials.jsonl", folder / "bench.db"
    make_file(src, N)
    subprocess.run([*CLI, "import", "jsonl", str(src), "--run", "bench", "--kind", "eval", "--db", str(db)], check=True)
    rng = random.Random(1)
    with src.open("w") as fh:
        for i in range(CAND):
            row = {"task_id": f"django__django-{10000 + i % 500}", "outcome": rng.choice(OUTCOMES)}
            fh.write(json.dumps(row) + "\n")
    subprocess.run([*CLI, "import", "jsonl", str(src), "--run", "cand", "--kind", "eval", "--db", str(db)], check=True)
    src.unlink()
    return db


def get(url: str) -> float:
    start = time.perf_counter()
    with urlopen(url, timeout=600) as res:
        res.read()
        assert res.status == 200, url
    return time.perf_counter() - start


def evict(db: Path) -> None:
    """Drop the ledger's pages from the OS file cache (only clean pages go; the ledger is only read)."""
    for f in (db, db.with_name(db.name + "-wal")):
        if f.exists():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def time_page(db: Path, path: str, repeats: int, cold: bool) -> tuple[float, float]:
    """(first visit, median of `repeats` warm visits) on a freshly started server."""
    if cold:
        evict(db)
    proc = subprocess.Popen([*CLI, "serve", "--db", str(db), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        if not m:
            sys.exit(f"serve did not start: {line}")
        while True:  # the line comes before uvicorn accepts: wait for it to answer (a 404) first
            try:
                urlopen(m.group(1) + "/ready", timeout=60)
            except HTTPError:
                break
            except URLError:
                time.sleep(0.05)
        first = get(m.group(1) + path)
        warm = statistics.median(get(m.group(1) + path) for _ in range(repeats))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return first, warm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="evict the ledger from the OS file cache per page")
    args = parser.parse_args()
    db = args.db or build(Path(tempfile.mkdtemp()))
    load_before = os.getloadavg()
    rows = {name: time_page(db, path, args.repeats, args.cold) for name, (path, _) in PAGES.items()}
    load_after = os.getloadavg()
    cache = "evicted from the OS file cache before each page" if args.cold else "OS file cache as it is"
    print(f"ledger {db} ({db.stat().st_size / 2**20:.0f} MiB; {cache}), {os.cpu_count()} CPUs")
    print(f"load average (1/5/15 min): before {' '.join(f'{x:.1f}' for x in load_before)},"
          f" after {' '.join(f'{x:.1f}' for x in load_after)}")  # fmt: skip
    print(f"{'page':<14} {'first (s)':>10} {'warm (s)':>9} {'target':>8}")
    for name, (first, warm) in rows.items():
        target = PAGES[name][1]
        verdict = "" if target is None else f"{target:>7.1f}s {'ok' if first < target else 'SLOW'}"
        print(f"{name:<14} {first:>10.3f} {warm:>9.3f} {verdict}")


if __name__ == "__main__":
    main()

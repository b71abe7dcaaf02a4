"""Benchmark: `trialbook compare` of 3 candidates x 500 tasks x 16 attempts, end to end from the CLI.

Target: < 1 s wall clock per command (process start-up included). Run by hand:
    python benchmarks/bench_compare.py [--repeats 7]
Prints the median and best wall time of the CLI call, the in-process compare time, the process
start-up floor (`trialbook --help`) and a 10,000-resample bootstrap's time.

    python benchmarks/bench_compare.py --distinct 100000
times instead one `compare --json` of two runs over 100,000 distinct tasks with one attempt each (target
< 5 s: most tasks untied, where the exact sign test used to grow quadratically; issue 48).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from trialbook.ledger.store import Ledger
from trialbook.stats.compare import CompareRequest, compare
from trialbook.stats.paired import bootstrap_ci
from trialbook.stats.synthetic import simulate_run, write_jsonl

TASKS, ATTEMPTS, CANDIDATES = 500, 16, 3
ALONE = (
    "import sys\n"
    "for a in ('harness', 'audit', 'training'): sys.modules['trialbook.cli.' + a] = None\n"
    "from trialbook.cli import main\n"
    "sys.argv = ['trialbook', *sys.argv[1:]]\n"
    "main()\n"
)


CPU: dict[str, float] = {}  # command label -> median CPU seconds (user + sys) of the child


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd: list[str], repeats: int, label: str = "") -> list[float]:
    """Wall seconds per run; the child's CPU seconds go to CPU[label] (less sensitive to machine load)."""
    out, cpu = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), _child_cpu()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append(time.perf_counter() - t)
        cpu.append(_child_cpu() - c)
    if label:
        CPU[label] = statistics.median(cpu)
    return out


def distinct(tasks: int, exe: str) -> None:
    """One compare of two runs over `tasks` distinct tasks, 1 attempt each, end to end from the CLI."""
    rng = np.random.default_rng(1)
    probs = rng.beta(0.5, 0.5, tasks)
    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/bench.db"
        for name, shift in (("base", 0.0), ("cand", 0.02)):
            path = write_jsonl(Path(tmp) / f"{name}.jsonl", simulate_run(np.clip(probs + shift, 0, 1), 1, rng))
            subprocess.run([exe, "import", "jsonl", str(path), "--run", name, "--db", db], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        wall = timed([exe, "compare", "base", "cand", "--json", "--db", db], 1, "distinct")[0]
        ledger = Ledger(db)
        t = time.perf_counter()
        row = compare(ledger, CompareRequest("base", ["cand"])).comparisons[0]
        inproc = time.perf_counter() - t
    print(f"{tasks} distinct tasks x 1 attempt, 2 runs: {row.wins + row.losses} untied")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"trialbook compare --json: {wall:.2f} s wall, CPU {CPU['distinct']:.2f} s (target < 5 s)")
    print(f"compare() in process: {inproc:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--distinct", type=int, default=0, help="time one compare over this many distinct tasks")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("trialbook"))
    if args.distinct:
        distinct(args.distinct, exe)
        return
    rng = np.random.default_rng(0)
    probs = rng.beta(0.5, 0.5, TASKS)
    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/bench.db"
        names = ["base"] + [f"cand{i}" for i in range(1, CANDIDATES + 1)]
        for i, name in enumerate(names):
            p = np.clip(probs + 0.01 * i, 0, 1)
            path = write_jsonl(Path(tmp) / f"{name}.jsonl", simulate_run(p, ATTEMPTS, rng))
            subprocess.run([exe, "import", "jsonl", str(path), "--run", name, "--db", db], check=True,
                           stderr=subprocess.DEVNULL)  # fmt: skip
        cli = timed([exe, "compare", *names, "--json", "--db", db], args.repeats, "json")
        cli_human = timed([exe, "compare", *names, "--db", db], args.repeats)
        floor = timed([exe, "--help"], args.repeats, "help")
        # The same command with only the ledger and stats commands loaded: what compare itself costs,
        # apart from the start-up of other areas' command modules (cli/__init__ imports them all).
        alone = timed([sys.executable, "-c", ALONE, "compare", *names, "--json", "--db", db], args.repeats, "alone")
        ledger = Ledger(db)
        t = time.perf_counter()
        for _ in range(args.repeats):
            compare(ledger, CompareRequest(names[0], names[1:]))
        inproc = (time.perf_counter() - t) / args.repeats
        d = rng.random(TASKS) - 0.5
        t = time.perf_counter()
        bootstrap_ci(d, n_resamples=10_000)
        boot = time.perf_counter() - t
    trials = (CANDIDATES + 1) * TASKS * ATTEMPTS
    print(f"{CANDIDATES} candidates x {TASKS} tasks x {ATTEMPTS} attempts ({trials} trials in the ledger)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"trialbook compare --json : median {statistics.median(cli):.3f} s, best {min(cli):.3f} s,"
          f" CPU {CPU['json']:.3f} s")  # fmt: skip
    print(f"trialbook compare (table): median {statistics.median(cli_human):.3f} s, best {min(cli_human):.3f} s")
    print(f"trialbook --help (start-up floor): median {statistics.median(floor):.3f} s, CPU {CPU['help']:.3f} s")
    print(f"compare --json, only ledger+stats commands loaded: median {statistics.median(alone):.3f} s,"
          f" CPU {CPU['alone']:.3f} s")  # fmt: skip
    print(f"compare() in process: {inproc * 1000:.1f} ms")
    print(f"bootstrap 10,000 resamples x {TASKS} tasks: {boot * 1000:.1f} ms")


if __name__ == "__main__":
    main()

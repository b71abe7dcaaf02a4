"""Benchmark: `trialbook train report` on ~1,000,000 training trajectories (target < 10 s, < 2 GiB peak).

Run by hand:  python benchmarks/bench_train_report.py [--workdir DIR] [--keep]
It generates a synthetic log (`sim rollouts`: 5120 tasks x 25 passes x 64 tasks/step x 8 rollouts),
imports it into a fresh SQLite ledger, then times `train report --json` in a child process and reads
that process's peak RSS (resource.getrusage RUSAGE_CHILDREN).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from trialbook.importers.jsonl import import_jsonl
from trialbook.ledger.store import Ledger
from trialbook.training.analysis import train_report
from trialbook.training.ingest import import_steps
from trialbook.training.sim_rollouts import RolloutConfig, generate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-train-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "ledger.db"
    traj, steps = work / "traj.jsonl", work / "steps.jsonl"
    try:
        if not db.exists():
            t0 = time.perf_counter()
            cfg = RolloutConfig(pool=5120, batch=64, group=8, epochs=25, staleness=3, seed=1)
            truth = generate(cfg, traj, steps)
            t1 = time.perf_counter()
            ledger = Ledger(str(db))
            n = import_jsonl(ledger, traj, "big", kind="train")
            import_steps(ledger, steps, "big")
            t2 = time.perf_counter()
            print(f"generated {truth.trajectories} trajectories in {t1 - t0:.1f} s, imported {n} in {t2 - t1:.1f} s")
        entry = "import sys; from trialbook.cli import main; sys.argv[0] = 'trialbook'; main()"
        cmd = [sys.executable, "-c", entry, "train", "report", "big", "--gpus", "16", "--json", "--db", str(db)]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        wall = time.perf_counter() - t0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        peak_mib, cpu = usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
        report = json.loads(out)
        print(
            f"train report: {report['trajectories']} trajectories, {report['steps']} steps,"
            f" {len(report['buckets'])} buckets, {len(report['encounters'])} encounter rows"
        )
        print(
            f"CLI: wall {wall:.2f} s (target < 10 s), CPU {cpu:.2f} s, peak RSS {peak_mib:.0f} MiB (target < 2048 MiB)"
        )
        ledger = Ledger(str(db))
        t0, c0 = time.perf_counter(), time.process_time()
        train_report(ledger, "big", gpus=16)
        print(f"train_report() in-process: wall {time.perf_counter() - t0:.2f} s, CPU {time.process_time() - c0:.2f} s")
        print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while measuring)")
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

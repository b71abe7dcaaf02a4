"""Soak: random kill -9 + resume cycles over the example tasks (run by hand, needs the Docker daemon):
`python benchmarks/bench_soak.py [--cycles 20] [--attempts 4] [--concurrency 2]`.

Cycle 1 starts `trialbook run`; every later cycle starts `trialbook resume`. Each one is killed with
SIGKILL after a random 3-12 s (mid-trial, mid-write, wherever it is), then a last `resume` runs the
rest to the end. Reported: trials planned, recorded, lost (planned pairs with no trial), duplicated
(pairs with more than one trial) and containers left (labelled with this ledger's id).
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

from trialbook.ledger.store import Ledger

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def _exists(db: str, run: str) -> bool:
    if not Path(db).exists():
        return False
    return run in Ledger(db).run_names()


def soak(cycles: int, attempts: int, concurrency: int, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="tb-soak-"))
    db, run = str(base / "ledger.db"), f"soak-{seed}"
    start = [*CLI, "run", str(EXAMPLES), "--agent", "oracle", "--run", run, "--attempts", str(attempts),
             "--concurrency", str(concurrency), "--runs-dir", str(base / "runs"), "--db", db]  # fmt: skip
    resume = [*CLI, "resume", run, "--db", db]
    t0 = time.monotonic()
    killed = finished_early = 0
    for _ in range(cycles):
        cmd = resume if _exists(db, run) else start  # a kill before the run was created: start it again
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=rng.uniform(3, 12))
            finished_early += 1  # nothing left to do (or it finished first): not a kill
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed += 1
    final = subprocess.run(resume, capture_output=True, text=True)
    if final.returncode != 0:
        raise SystemExit(f"final resume failed: {final.stderr.strip()}")
    ledger = Ledger(db)
    rows = list(ledger.trial_rows(ledger.get_run(run).id, current_only=False))
    planned = {(t.name, a) for t in EXAMPLES.iterdir() if t.is_dir() for a in range(attempts)}
    seen: dict[tuple[str, int], int] = {}
    for r in rows:
        seen[(r.task_id, r.attempt)] = seen.get((r.task_id, r.attempt), 0) + 1
    client = docker.from_env()
    left = client.containers.list(all=True, filters={"label": [f"trialbook.ledger={ledger.id}"]})
    return {
        "cycles": cycles,
        "killed_mid_run": killed,
        "ended_before_kill": finished_early,
        "attempts": attempts,
        "concurrency": concurrency,
        "planned": len(planned),
        "recorded": len(rows),
        "lost": len(planned - set(seen)),
        "duplicated": sum(n - 1 for n in seen.values() if n > 1),
        "containers_left": len(left),
        "wall_s": round(time.monotonic() - t0, 1),
        "ledger": db,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--attempts", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()
    result = soak(args.cycles, args.attempts, args.concurrency, args.seed)
    print(json.dumps(result, indent=2))
    if result["lost"] or result["duplicated"] or result["containers_left"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

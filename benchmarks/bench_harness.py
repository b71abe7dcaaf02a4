"""Harness speed on the real Docker daemon (run by hand: `python benchmarks/bench_harness.py`).

The same trivial task (write a file, test it, reward 1) run two ways, side by side at concurrency
1, 2 and 4:
- bare: `docker run --rm --network none IMAGE sh -c '<solve>; <test>'`, N of them through a pool of
  `concurrency` threads;
- trialbook: N full trials through the runner (`harness.pool.execute`: container with labels and
  limits, oracle agent, the agent's change carried to a fresh verifier container, reward read back,
  containers removed, ledger row + trial folder written), with the warm pool on (default) or off.
Each (concurrency, way) block runs `--rounds` times, interleaved (bare, trialbook, bare, ...), so
both see the same machine load; the figure is the median wall time per trial over the rounds, and
the ratio is trialbook / bare. The load average is printed with it: on a shared machine it matters.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trialbook.harness.config import Plan, RunConfig
from trialbook.harness.executors import LocalExecutor
from trialbook.harness.pool import execute
from trialbook.harness.stack import connect
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.tasks import load_task

SOLVE = "cd /testbed && echo fixed > answer.txt"
TEST = (
    "mkdir -p /logs/verifier && cd /testbed"
    " && if grep -q fixed answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
)


def make_task(root: Path) -> Path:
    task = root / "tasks" / "trivial"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text("[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n")
    (task / "instruction.md").write_text("Write 'fixed' to /testbed/answer.txt.\n")
    (task / "environment" / "Dockerfile").write_text("FROM trialbook-base:bookworm\nWORKDIR /testbed\n")
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{SOLVE}\n")
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\n{TEST}\n")
    return task


def bare_block(image: str, n: int, c: int) -> float:
    cmd = [
        "docker",
        "run",
        "--rm",
        "--network",
        "none",
        image,
        "sh",
        "-c",
        f"{SOLVE}; {TEST}; cat /logs/verifier/reward.txt",
    ]

    def one(_: int) -> None:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        assert out.strip() == "1", out

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t


def trialbook_block(ledger: Ledger, task_dir: Path, root: Path, n: int, c: int, warm: bool, tag: str) -> float:
    engine = connect()
    spec = load_task(task_dir)
    name = f"bench-{tag}"
    config = RunConfig(tasks_dir=str(task_dir.parent), agent="oracle", concurrency=c, runs_dir=str(root / "runs"),
                       warm_pool=warm)  # fmt: skip
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name=name, config=config.model_dump()), replace=True)
    plans = [Plan(spec, a) for a in range(n)]
    t = time.perf_counter()
    tally = execute(ledger, LocalExecutor(engine), run_id, name, config, plans)
    wall = time.perf_counter() - t
    assert tally.resolved == n, tally
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12, help="trials per block")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per concurrency")
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--no-warm", action="store_true", help="trialbook without the warm pool")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task = make_task(root)
        spec = load_task(task)
        engine = connect()
        image, _ = engine.ensure_image(
            spec.task_id, None, spec.dockerfile.parent, spec.environment_hash, "bench", False
        )
        ledger = Ledger(str(root / "bench.db"))
        bare_block(image, 2, 1)  # warm-up: image layers in the page cache
        trialbook_block(ledger, task, root, 2, 1, not args.no_warm, "warmup")
        load_before = os.getloadavg()[0]
        for c in levels:
            bare, tb = [], []
            for r in range(args.rounds):
                bare.append(bare_block(image, args.trials, c) / args.trials)
                tb.append(
                    trialbook_block(ledger, task, root, args.trials, c, not args.no_warm, f"c{c}-r{r}") / args.trials
                )
            b, t = statistics.median(bare), statistics.median(tb)
            rows.append({"concurrency": c, "trials": args.trials, "rounds": args.rounds,
                         "bare_s_per_trial": round(b, 3), "trialbook_s_per_trial": round(t, 3),
                         "ratio": round(t / b, 3)})  # fmt: skip
            print(json.dumps(rows[-1]), flush=True)
        engine.clean("bench", images=True)
    out = {"warm_pool": not args.no_warm, "rows": rows,
           "load_average": {"start": round(load_before, 2), "end": round(os.getloadavg()[0], 2)}}  # fmt: skip
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

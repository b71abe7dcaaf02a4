"""Harness speed on the real Docker daemon (run by hand: `python benchmarks/bench_harness.py`).

1. Per-trial overhead: a trivial task run as a full trialbook trial (container with labels and
   limits, oracle agent, tests copied in, verifier, reward read back, container removed, ledger
   row + result.json written) against a bare `docker run --rm IMAGE sh -c '<solve>; <test>'`
   doing the same work, measured side by side (interleaved) over N trials; median ratio.
2. Throughput: trials per minute at concurrency 1, 2 and 4 through the runner.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from trialbook.agents import get_agent
from trialbook.harness.config import Plan, RunConfig
from trialbook.harness.pool import execute
from trialbook.harness.results import record_trial, write_trial_dir
from trialbook.harness.stack import connect
from trialbook.harness.trial import Stopper, TrialSettings, run_trial
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
    (task / "environment" / "Dockerfile").write_text("FROM trialbook-base:bookworm\nRUN mkdir -p /testbed\n")
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{SOLVE}\n")
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\n{TEST}\n")
    return task


def overhead(task_dir: Path, root: Path, n: int) -> dict[str, float]:
    engine = connect()
    spec = load_task(task_dir)
    image, _ = engine.ensure_image(spec.task_id, None, spec.dockerfile.parent, spec.environment_hash, "bench", False)
    ledger = Ledger(str(root / "bench.db"))
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name="bench-overhead"), replace=True)
    settings = TrialSettings(run="bench-overhead", agent=get_agent("oracle"))
    bare_cmd = ["docker", "run", "--rm", "--network", "none", image, "sh", "-c", f"{SOLVE}; {TEST}"]
    bare, harness = [], []
    subprocess.run(bare_cmd, check=True, capture_output=True)  # warm-up
    for i in range(n):
        t = time.perf_counter()
        subprocess.run(bare_cmd, check=True, capture_output=True)
        bare.append(time.perf_counter() - t)
        t = time.perf_counter()
        result = run_trial(engine, spec, i, settings, Stopper())
        record_trial(ledger, run_id, result)
        write_trial_dir(root / "runs" / "bench-overhead", "bench-overhead", result)
        harness.append(time.perf_counter() - t)
        assert result.trial.reward == 1.0, result.trial
    ratios = [h / b for h, b in zip(harness, bare, strict=True)]
    return {
        "trials": n,
        "bare_median_s": round(statistics.median(bare), 3),
        "trialbook_median_s": round(statistics.median(harness), 3),
        "median_ratio": round(statistics.median(ratios), 3),
    }


def throughput(task_dir: Path, root: Path, trials: int, levels: list[int]) -> list[dict[str, float]]:
    engine = connect()
    spec = load_task(task_dir)
    ledger = Ledger(str(root / "bench.db"))
    rows = []
    for c in levels:
        name = f"bench-c{c}"
        config = RunConfig(tasks_dir=str(task_dir.parent), agent="oracle", concurrency=c, runs_dir=str(root / "runs"))
        with ledger.transaction() as conn:
            run_id = ledger.create_run(conn, Run(name=name, config=config.model_dump()), replace=True)
        plans = [Plan(spec, a) for a in range(trials)]
        t = time.perf_counter()
        tally = execute(ledger, engine, run_id, name, config, plans)
        wall = time.perf_counter() - t
        assert tally.resolved == trials, tally
        rows.append({"concurrency": c, "trials": trials, "wall_s": round(wall, 2),
                     "trials_per_min": round(60 * trials / wall, 1)})  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="side-by-side trials for the overhead ratio")
    ap.add_argument("--throughput-trials", type=int, default=12)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        task = make_task(root)
        out = {
            "overhead": overhead(task, root, args.trials),
            "throughput": throughput(task, root, args.throughput_trials, [1, 2, 4]),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

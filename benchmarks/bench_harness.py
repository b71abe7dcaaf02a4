"""Harness speed on the real Docker daemon (run by hand: `python benchmarks/bench_harness.py`; prints a table).

The same trivial task (write a file, test it, reward 1) run side by side at concurrency 1, 2 and 4:
- bare: `docker run --rm --network none IMAGE sh -c '<solve>; <test>'`, N of them through a pool of
  `concurrency` threads;
- trialbook: N full trials through the runner (`harness.pool.execute`: container with labels and
  limits, oracle agent, the agent's change carried to a fresh verifier container (the default
  verifier isolation), reward read back, containers removed, ledger row + trial folder written),
  with the warm pool (default) and, unless --no-cold, without it (`--no-warm-pool`).
The task's image is a git working tree, as a real repository task's is (verifier isolation diffs it).
Each concurrency runs `--rounds` rounds, the ways interleaved (bare, trialbook, cold, bare, ...), so
all see the same machine load; a figure is the median wall time per trial over the rounds, the ratio
is trialbook / bare. The 1-minute load average at the end of each concurrency's rounds is printed
beside it: on a shared machine it matters. `--json` prints the rows as JSON instead of the table.
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
from trialbook.sandbox import DockerEngine
from trialbook.tasks import TaskSpec, load_task

SOLVE = "cd /testbed && echo fixed > answer.txt"
TEST = (
    "mkdir -p /logs/verifier && cd /testbed"
    " && if grep -q fixed answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
)
DOCKERFILE = """FROM trialbook-base:bookworm
WORKDIR /testbed
RUN git init -q && git -c user.name=tb -c user.email=tb@example.invalid commit -q --allow-empty -m init
"""


def make_task(root: Path) -> Path:
    task = root / "tasks" / "trivial"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text("[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\n")
    (task / "instruction.md").write_text("Write 'fixed' to /testbed/answer.txt.\n")
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{SOLVE}\n")
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\n{TEST}\n")
    return task


def bare_block(image: str, n: int, c: int) -> float:
    script = f"{SOLVE}; {TEST}; cat /logs/verifier/reward.txt"
    cmd = ["docker", "run", "--rm", "--network", "none", image, "sh", "-c", script]

    def one(_: int) -> None:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        assert out.strip() == "1", out

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t


def trialbook_block(
    ledger: Ledger, engine: DockerEngine, spec: TaskSpec, root: Path, n: int, c: int, warm: bool, tag: str
) -> float:
    name = f"bench-{tag}"
    config = RunConfig(tasks_dir=str(spec.path.parent), agent="oracle", concurrency=c, runs_dir=str(root / "runs"),
                       warm_pool=warm)  # fmt: skip
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name=name, config=config.model_dump()), replace=True)
    plans = [Plan(spec, a) for a in range(n)]
    t = time.perf_counter()
    tally = execute(ledger, LocalExecutor(engine), run_id, name, config, plans)
    wall = time.perf_counter() - t
    assert tally.resolved == n, f"{tally} (see {root / 'runs' / name})"
    return wall


def table(rows: list[dict[str, float]], cold: bool) -> str:
    head = ["concurrency", "bare s/trial", "trialbook s/trial", "ratio"]
    head += ["--no-warm-pool s/trial", "ratio"] if cold else []
    head += ["load avg (1 min)"]
    lines = [head]
    for r in rows:
        line = [f"{r['concurrency']:.0f}", f"{r['bare_s']:.3f}", f"{r['trialbook_s']:.3f}", f"{r['ratio']:.2f}"]
        line += [f"{r['cold_s']:.3f}", f"{r['cold_ratio']:.2f}"] if cold else []
        lines.append([*line, f"{r['load_1min']:.1f}"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=12, help="trials per block")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per concurrency")
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--no-cold", action="store_true", help="skip trialbook without the warm pool")
    ap.add_argument("--json", action="store_true", help="rows as JSON instead of the table")
    args = ap.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    cold = not args.no_cold
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec = load_task(make_task(root))
        engine = connect()
        image, _ = engine.ensure_image(
            spec.task_id, None, spec.dockerfile.parent, spec.environment_hash, "bench", False
        )
        ledger = Ledger(str(root / "bench.db"))
        try:
            bare_block(image, 2, 1)  # warm-up: image layers in the page cache, imports done
            trialbook_block(ledger, engine, spec, root, 2, 1, True, "warmup")
            for c in levels:
                bare, tb, tb_cold = [], [], []
                for r in range(args.rounds):
                    bare.append(bare_block(image, args.trials, c) / args.trials)
                    tb.append(trialbook_block(ledger, engine, spec, root, args.trials, c, True, f"c{c}-r{r}"))
                    if cold:
                        wall = trialbook_block(ledger, engine, spec, root, args.trials, c, False, f"c{c}-r{r}-cold")
                        tb_cold.append(wall)
                b = statistics.median(bare)
                row = {"concurrency": c, "trials": args.trials, "rounds": args.rounds, "bare_s": round(b, 3)}
                row["trialbook_s"] = round(statistics.median(tb) / args.trials, 3)
                row["ratio"] = round(row["trialbook_s"] / b, 3)
                if cold:
                    row["cold_s"] = round(statistics.median(tb_cold) / args.trials, 3)
                    row["cold_ratio"] = round(row["cold_s"] / b, 3)
                row["load_1min"] = round(os.getloadavg()[0], 1)
                rows.append(row)
        finally:
            engine.clean("bench", images=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{args.trials} trials x {args.rounds} rounds per figure (median of the rounds)")
        print(table(rows, cold))


if __name__ == "__main__":
    main()

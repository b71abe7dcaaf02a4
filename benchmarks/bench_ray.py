"""Per-trial overhead of `--executor ray` against `--executor local` (run by hand: `python benchmarks/bench_ray.py`).

The same trivial tasks (benchmarks/bench_harness.py's task, several copies), the same agent (oracle) and the
same concurrency, run through the same runner (`start_run`) with each executor, side by side: the runs
alternate local, ray, local, ray, ... and the medians are compared. Ray runs on a real multi-node cluster
started on this machine (ray.cluster_utils.Cluster: a head and `--nodes` worker nodes with `docker`
slots), or on the cluster at RAY_ADDRESS; its one-off connection time is reported apart, since a run pays it
once, not per trial. Images are built once before timing (both executors use the same content-hash tag).
Target: ray / local <= 1.2 per trial.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from bench_harness import make_task

from trialbook.harness.placement.choice import Where, make_executor
from trialbook.harness.placement.executors import Executor, LocalExecutor
from trialbook.harness.run.config import RunConfig
from trialbook.harness.run.lifecycle import start_run
from trialbook.ledger.store import Ledger

MB = 1024 * 1024


DOCKERFILE = """FROM trialbook-base:bookworm
WORKDIR /testbed
RUN git init -q && git -c user.name=tb -c user.email=tb@example.invalid commit -q --allow-empty -m init
"""  # verifier isolation carries the agent's change out of the working tree with git


def make_tasks(root: Path, copies: int) -> Path:
    first = make_task(root)
    (first / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (first / "task.toml").write_text((first / "task.toml").read_text() + "[environment]\nmemory_mb = 512\n")
    for i in range(1, copies):
        twin = first.parent / f"trivial-{i}"
        twin.mkdir()
        for path in first.rglob("*"):
            target = twin / path.relative_to(first)
            if path.is_dir():
                target.mkdir(exist_ok=True)
            else:
                target.write_bytes(path.read_bytes())
    return first.parent


def timed_run(ledger: Ledger, executor: Executor, name: str, config: RunConfig) -> float:
    t = time.perf_counter()
    tally, _ = start_run(ledger, name, config, replace=True, executor=executor)
    wall = time.perf_counter() - t
    assert tally.resolved == tally.total, tally
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=4, help="copies of the trivial task")
    ap.add_argument("--attempts", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3, help="local/ray pairs, alternating")
    ap.add_argument("--nodes", type=int, default=2, help="worker nodes of the local cluster (without RAY_ADDRESS)")
    args = ap.parse_args()
    cluster = None
    if not os.environ.get("RAY_ADDRESS"):
        from ray.cluster_utils import Cluster

        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 * MB,
                                                                 "include_dashboard": False})  # fmt: skip
        for _ in range(args.nodes):
            cluster.add_node(num_cpus=args.concurrency, resources={"docker": args.concurrency},
                             object_store_memory=80 * MB)  # fmt: skip
        cluster.wait_for_nodes()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            tasks_dir = make_tasks(root, args.tasks)
            ledger = Ledger(str(root / "bench.db"))
            config = RunConfig(tasks_dir=str(tasks_dir), agent="oracle", attempts=args.attempts,
                               concurrency=args.concurrency, runs_dir=str(root / "runs"))  # fmt: skip
            t = time.perf_counter()
            ray_exec = make_executor(Where("ray", ray_address=cluster.address if cluster else None))
            connect_s = time.perf_counter() - t
            local = LocalExecutor()
            timed_run(ledger, local, "bench-ray-warmup-local", config)  # builds the image once
            timed_run(ledger, ray_exec, "bench-ray-warmup-ray", config)  # workers, task folders unpacked
            walls: dict[str, list[float]] = {"local": [], "ray": []}
            for r in range(args.rounds):
                walls["local"].append(timed_run(ledger, local, f"bench-ray-local-{r}", config))
                walls["ray"].append(timed_run(ledger, ray_exec, f"bench-ray-ray-{r}", config))
            nodes = {(t.extra or {})["node_id"] for t in ledger.trial_rows(ledger.get_run("bench-ray-ray-0").id)}
            local.clean("bench-ray-warmup-local")
    finally:
        if cluster is not None:
            import ray

            ray.shutdown()
            cluster.shutdown()
    trials = args.tasks * args.attempts
    per = {k: statistics.median(v) / trials for k, v in walls.items()}
    print(json.dumps({
        "trials_per_run": trials,
        "concurrency": args.concurrency,
        "rounds": args.rounds,
        "ray_nodes_used": len(nodes),
        "wall_s": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "per_trial_s": {k: round(v, 3) for k, v in per.items()},
        "ratio_ray_over_local": round(per["ray"] / per["local"], 3),
        "ray_connect_s_once": round(connect_s, 2),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()

"""Benchmark: `regrade` and `audit` over a training-sized run whose every trial has a verifier log.

A run of N trials (default 8,000, about the seed's 8,122 judged trajectories) on the 50 real
SWE-bench tasks of the shared logs, each trial carrying one of those real official test logs
(sizes 2 KB to 1 MB). Run by hand:
    python benchmarks/bench_audit.py [--trials 8000] [--jobs N]
Prints the wall time of regrade_run and audit_run in process (the CLI adds ~3 s of imports).
Target: a training run's worth (8,000 trials) audited in minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from trialbook.audit.failures import audit_run
from trialbook.audit.regrade import DEFAULT_JOBS, regrade_run
from trialbook.importers.swebench import read_instances
from trialbook.importers.to_ledger import import_run
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import Outcome
from trialbook.records import Run, Trial

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "swebench-verified"
LOGS = SHARED / "logs" / "20240620_sweagent_claude3.5sonnet"


def build(db: str, n: int) -> None:
    ledger = Ledger(db)
    reports = sorted(LOGS.glob("*/report.json"))
    ids = [p.parent.name for p in reports]
    resolved = {i: json.loads((LOGS / i / "report.json").read_text())[i]["resolved"] for i in ids}
    logs = {i: (LOGS / i / "test_output.txt").read_text(errors="replace") for i in ids}
    instances = [t for t in read_instances(SHARED / "instances.jsonl") if t.task_id in set(ids)]
    plan = [(ids[k % len(ids)], k // len(ids)) for k in range(n)]

    def rows(run_id: int):
        for task_id, attempt in plan:
            ok = resolved[task_id]
            trial = Trial(task_id=task_id, attempt=attempt, outcome=Outcome.RESOLVED if ok else Outcome.UNRESOLVED,
                          reward=1.0 if ok else 0.0)  # fmt: skip
            yield trial_row(run_id, trial)

    def attach(conn, run_id: int) -> None:
        ledger.upsert_tasks(conn, instances)
        tid = ledger.trial_ids(conn, run_id)
        ledger.insert_artifacts(conn, ((tid[key], "test_output.txt", logs[key[0]]) for key in plan))

    import_run(ledger, Run(name="bench"), rows, after=attach)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=8000)
    ap.add_argument("--jobs", type=int, default=DEFAULT_JOBS)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "ledger.db")
        t = time.perf_counter()
        build(db, args.trials)
        print(f"built {args.trials} trials with logs in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        ledger = Ledger(db)
        t = time.perf_counter()
        r = regrade_run(ledger, "bench", jobs=args.jobs)
        print(f"regrade: {r.regraded} trials, agree {r.agree}, {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        a = audit_run(ledger, "bench", jobs=args.jobs)
        print(f"audit:   {a.trials} trials, {a.p2p_penalties.count} P2P penalties, "
              f"{time.perf_counter() - t:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()

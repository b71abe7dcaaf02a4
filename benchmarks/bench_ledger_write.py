"""A trial's ledger write as its run grows (run by hand: `python benchmarks/bench_ledger_write.py [--before SRC]`).

`harness/trial/writer.record_trial` (the one transaction a finished trial costs: its row, its logs, the run's
summary brought up to date) timed on an SQLite ledger whose run already holds 0, 10,000 and 50,000 trials
(500 tasks, as an RL run's rollouts), median of 50 writes each, in a fresh process per size. A run's trials are
written one by one under one lock (harness/trial/writer.py), so this time bounds how many trials a second any
concurrency can record. `--before SRC` (the `src` folder of an older checkout) also times that code, the two
taking turns size by size, so both see the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ONE = r"""
import json, statistics, sys, tempfile, time
from trialbook.harness.trial.writer import record_trial
from trialbook.harness.trial.execution import TrialResult
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import Outcome
from trialbook.records import Run, Trial

size = int(sys.argv[1])
ledger = Ledger(tempfile.mkdtemp() + "/bench.db")
def trial(i):
    return Trial(task_id=f"t{i % 500}", attempt=i // 500, outcome=Outcome.RESOLVED if i % 3 else Outcome.UNRESOLVED,
                 reward=1.0 if i % 3 else 0.0, started_at="2026-01-01T00:00:00", finished_at="2026-01-01T00:00:01")
with ledger.transaction() as conn:
    run_id = ledger.create_run(conn, Run(name="bench", config={}))
    ledger.insert_trials(conn, (trial_row(run_id, trial(i)) for i in range(size)))
times = []
for j in range(50):
    t = time.perf_counter()
    record_trial(ledger, run_id, TrialResult(trial(size + j), name="x", agent_log="a", verifier_log="v"))
    times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0,10000,50000", help="trials already in the run")
    ap.add_argument("--before", help="the src folder of an older checkout, timed alternately")
    args = ap.parse_args()
    env = dict(os.environ)
    ways = {"after": env}
    if args.before:
        ways = {"before": {**env, "PYTHONPATH": os.pathsep.join([args.before, env.get("PYTHONPATH", "")])}, **ways}
    rows = []
    for size in (int(x) for x in args.sizes.split(",")):
        row = {"trials in run": size}
        for label, way_env in ways.items():
            out = subprocess.run([sys.executable, "-c", ONE, str(size)], env=way_env, capture_output=True, text=True)
            if out.returncode != 0:
                raise SystemExit(f"{label}: {out.stderr.strip().splitlines()[-1]}")
            row[f"{label} ms"] = round(json.loads(out.stdout) * 1000, 2)
        rows.append(row)
    print(f"record_trial, median of 50 writes (load avg {os.getloadavg()[0]:.1f})")
    head = list(rows[0])
    print("  ".join(f"{h:>14}" for h in head))
    for row in rows:
        print("  ".join(f"{row[h]:>14}" for h in head))


if __name__ == "__main__":
    main()

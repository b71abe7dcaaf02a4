"""The driver at scale: N trials in flight from one process (run by hand: `python benchmarks/bench_scale.py`).

Sandboxes are the FAKE backend "fake-sleep" (sandbox/fake.py): no container at all, the agent's one command is
`sleep S`, every other command does nothing. So everything measured is the driver's own: `trialbook run`'s code from
harness/run/lifecycle.start_run on (a thread per trial in flight, run_trial, the verifier's staging and grading of an
empty
output, the ledger write and the trial folder of each trial, the progress bar), with N trials at once.
`--backend docker` (or podman) runs the same on real containers (`FROM trialbook-base:bookworm`, the agent's
`sleep S` in its container, the verifier's test.sh for real: each trial resolved): the driver's own figures again,
the daemon's CPU not counted in them.

Printed (one row per N; `--json` for JSON): the wall time of the run's execution against the sleep (goal: within
10%), the driver's CPU seconds per trial (user + system of this process, start-up excluded), its peak RSS, its peak
open files, sockets and threads (sampled every 0.2 s), the most sandboxes alive at once, and ledger writes a second
(trials recorded over the span from the first record to the last: they all end within that span). The load average
before and after is printed: on a shared machine it matters.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TASK_TOML = '[agent]\ntimeout_sec = 3600\n[verifier]\ntimeout_sec = 60\nisolation = "container"\n'
TEST_SH = "#!/bin/bash\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"


def _task(root: Path, real: bool) -> Path:
    task = root / "tasks" / "sleepy"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    (task / "task.toml").write_text(TASK_TOML)
    (task / "instruction.md").write_text("Sleep.\n")
    (task / "environment" / "Dockerfile").write_text("FROM trialbook-base:bookworm\n" if real else "FROM scratch\n")
    (task / "tests" / "test.sh").write_text(TEST_SH)
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    return root / "tasks"


class Sampler(threading.Thread):
    """Peaks of this process's open files, sockets and threads, and the fake backend's boxes alive."""

    def __init__(self, backend: object, n: int, run_name: str) -> None:
        super().__init__(daemon=True)
        self.backend, self.n, self.run_name, self.done = backend, n, run_name, threading.Event()
        self.peak = {"open_files": 0, "sockets": 0, "threads": 0, "in_flight": 0}
        self.t0 = time.monotonic()
        self.all_in_flight: float | None = None  # seconds from the start until all n trials were in flight
        self.cpu = 0.0  # this thread's own CPU seconds (taken off the driver's)

    def live(self) -> int:
        """Sandboxes alive now: the fake's count, or a real daemon's containers of the run."""
        if hasattr(self.backend, "live"):
            return int(self.backend.live())
        api = self.backend.client.api  # type: ignore[attr-defined]
        return len(api.containers(filters={"label": f"trialbook.run={self.run_name}"}))

    def run(self) -> None:
        while not self.done.wait(0.2):
            fds = os.listdir("/proc/self/fd")
            socks = 0
            for fd in fds:
                with contextlib.suppress(OSError):
                    socks += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
            now = {
                "open_files": len(fds),
                "sockets": socks,
                "threads": threading.active_count(),
                "in_flight": self.live(),
            }
            for key, value in now.items():
                self.peak[key] = max(self.peak[key], value)
            if self.all_in_flight is None and now["in_flight"] >= self.n:
                self.all_in_flight = time.monotonic() - self.t0
            self.cpu = time.thread_time()


def _fake_backend() -> None:
    """An older checkout (--before) has no fake backend: this checkout's sandbox/backend.py and sandbox/fake.py are
    loaded into it (they need nothing of it but sandbox/box.py and sandbox/cgroup.py)."""
    try:
        importlib.import_module("trialbook.sandbox.fake")
    except ImportError:
        here = Path(__file__).resolve().parent.parent / "src" / "trialbook" / "sandbox"
        for name in ("backend", "fake"):
            spec = importlib.util.spec_from_file_location(f"trialbook.sandbox.{name}", here / f"{name}.py")
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)


def one(n: int, sleep_s: float, backend_name: str) -> dict[str, object]:
    _fake_backend()
    import trialbook.harness.trial.writer as results
    from trialbook.harness.placement.executors import LocalExecutor
    from trialbook.harness.run.config import RunConfig
    from trialbook.harness.run.lifecycle import start_run
    from trialbook.ledger.store import Ledger
    from trialbook.sandbox.fake import FakeSleepBackend

    # where the driver records a finished trial: record_trials (a group of them), or an older checkout's record_trial
    pool, attr = (results, "record_trials") if hasattr(results, "record_trials") else (importlib.import_module(
        "trialbook.harness.run.execute"), "record_trial")  # fmt: skip

    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    tasks = _task(root, backend_name != "fake-sleep")
    ledger = Ledger(str(root / "ledger.db"))
    config = RunConfig(
        tasks_dir=str(tasks), agent="cmd", agent_options={"command": f"sleep {sleep_s:g}"}, attempts=n,
        concurrency=n, runs_dir=str(root / "runs"), retries=0,
    )  # fmt: skip
    if backend_name == "fake-sleep":
        backend: Any = FakeSleepBackend()
    else:
        from trialbook.harness.run.stack import connect

        backend = connect(backend_name)
    run_name = f"scale-{n}-{os.getpid()}"
    recorded: list[float] = []  # when each trial was in the ledger
    commits: list[int] = []  # trials per ledger transaction
    real_record = getattr(pool, attr)

    def timed_record(*args: object, **kwargs: object) -> object:
        out = real_record(*args, **kwargs)
        k = len(out) if isinstance(out, list) else 1
        recorded.extend([time.monotonic()] * k)
        commits.append(k)
        return out

    setattr(pool, attr, timed_record)
    sampler = Sampler(backend, n, run_name)
    sampler.start()
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    try:
        tally, _ = start_run(ledger, run_name, config, executor=LocalExecutor(backend))  # type: ignore[arg-type]
    finally:
        setattr(pool, attr, real_record)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    sampler.done.set()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime) - sampler.cpu
    span = recorded[-1] - recorded[0] if len(recorded) > 1 else 0.0
    return {
        "backend": backend_name,
        "trials": n,
        "sleep_s": sleep_s,
        "done": tally.done,
        "resolved": tally.resolved,
        "wall_s": round(wall, 2),
        "wall/sleep": round(wall / sleep_s, 3),
        "all_in_flight_s": None if sampler.all_in_flight is None else round(sampler.all_in_flight, 2),
        "cpu_ms/trial": round(cpu / n * 1000, 2),
        "peak_rss_mb": round(after.ru_maxrss / 1024, 1),
        **{f"peak_{k}": v for k, v in sampler.peak.items()},
        "ledger_writes/s": round((len(recorded) - 1) / span, 1) if span > 0 else None,
        "transactions": len(commits),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", default="1000", help="trials in flight, comma-separated (each a run of its own)")
    ap.add_argument("--sleep", type=float, default=30.0, help="seconds each trial's agent sleeps")
    ap.add_argument("--rounds", type=int, default=1, help="runs per size and way (the ways taking turns)")
    ap.add_argument("--before", help="the src folder of an older checkout, timed alternately (each first in turn)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--backend", default="fake-sleep", help="fake-sleep (the driver alone), or docker / podman")
    ap.add_argument("--one", nargs=2, type=float, help=argparse.SUPPRESS)  # N SLEEP: one measurement, as JSON
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.one:
        print(json.dumps(one(int(args.one[0]), args.one[1], args.backend)))
        return
    ways = {"after": dict(os.environ)}
    if args.before:
        old = {**os.environ, "PYTHONPATH": os.pathsep.join([args.before, os.environ.get("PYTHONPATH", "")])}
        ways = {"before": old, **ways}
    rows = []
    for n in (int(x) for x in args.trials.split(",")):
        for k in range(args.rounds):
            order = list(ways.items())
            for label, env in order[k % len(order) :] + order[: k % len(order)]:
                load0 = os.getloadavg()[0]
                cmd = [sys.executable, __file__, "--one", str(n), str(args.sleep), "--backend", args.backend]
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    raise SystemExit(f"{label}: {(out.stderr.strip().splitlines() or ['?'])[-1]}")
                row = {"way": label, **json.loads(out.stdout.strip().splitlines()[-1])}
                row["load_avg"] = f"{load0:.1f} -> {os.getloadavg()[0]:.1f}"
                rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    keys = list(rows[0])
    print(" | ".join(keys))
    for row in rows:
        print(" | ".join(str(row[k]) for k in keys))


if __name__ == "__main__":
    main()

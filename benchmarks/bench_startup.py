"""Start-up time of the data commands (run by hand: `python benchmarks/bench_startup.py [N] [--before SRC]`).

`trialbook runs`, `show RUN` and `compare --help` on a small ledger, each started N times (default 10)
as a fresh process, against `python -c pass` as the floor. Reports the median wall time and the
median CPU time (user + system of the child): on a loaded machine the wall time mostly measures the
queue for a core, the CPU time what the command itself costs. Target (issue 18): <= 0.3 s.

`--run` adds `trialbook run` end to end, one oracle trial of examples/tasks/plain-bugfix on the local Docker daemon
(its image built by a warm-up run first; each timed run `--replace`s the last): the fixed cost of a run (imports,
image and daemon checks, the ledger opened, the task loaded) on top of one real trial (two containers, pytest,
per-test grading). The CPU figure is trialbook's process only, not the daemon's; `to_trial_start` is the time from
the process's launch to its trial's start (result.json's started_at): the fixed cost before the first container
(issue 42).

`--before SRC` (e.g. the `src` folder of an older checkout: `git archive HEAD~3 src | tar -x -C /tmp/old`)
also times every command with that code first on PYTHONPATH, alternating the two runs by run so that
both see the same load: a side-by-side before/after.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path


def timed(
    cmd: list[str], n: int, envs: dict[str, dict[str, str]], same_output: bool = True, runs: Path | None = None
) -> dict[str, dict[str, float]]:
    """Median wall and CPU time of `cmd` under each env, the envs taking turns run by run; with `runs` (a `trialbook
    run`'s runs folder), also the median seconds from the process's launch to its trial's start (result.json)."""
    firsts: dict[str, list[float]] = {label: [] for label in envs}
    walls: dict[str, list[float]] = {label: [] for label in envs}
    cpus: dict[str, list[float]] = {label: [] for label in envs}
    outputs: dict[str, bytes] = {}
    for _ in range(n):
        for label, env in envs.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t, launched = time.perf_counter(), time.time()
            proc = subprocess.run(cmd, capture_output=True, env=env)
            walls[label].append(time.perf_counter() - t)
            if runs is not None:
                started = json.loads(next(runs.glob("*/*/result.json")).read_text())["started_at"]
                firsts[label].append(datetime.fromisoformat(started).timestamp() - launched)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[label].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
            if proc.returncode != 0:
                sys.exit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[-500:]}")
            outputs.setdefault(label, proc.stdout)
    if same_output and len(set(outputs.values())) > 1:  # before and after must print the same bytes
        sys.exit(f"{' '.join(cmd)}: the outputs differ between {', '.join(outputs)}")
    out = {
        label: {"wall_median_s": round(statistics.median(walls[label]), 3),
                "cpu_median_s": round(statistics.median(cpus[label]), 3)}
        for label in envs
    }  # fmt: skip
    for label in envs if runs is not None else ():
        out[label]["to_trial_start_median_s"] = round(statistics.median(firsts[label]), 3)
    return out


def make_ledger(db: Path, env: dict[str, str]) -> None:
    rows = [{"task_id": f"repo__repo-{i % 20}", "outcome": "resolved" if i % 3 else "unresolved"} for i in range(200)]
    src = db.parent / "trials.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("base", "cand"):
        cmd = [*trialbook(), "import", "jsonl", str(src), "--run", name, "--db", str(db)]
        subprocess.run(cmd, check=True, capture_output=True, env=env)


def trialbook() -> list[str]:
    exe = shutil.which("trialbook", path=str(Path(sys.executable).parent)) or shutil.which("trialbook")
    if exe is None:
        sys.exit("the trialbook command is not installed next to this Python")
    return [sys.executable, exe]


def main() -> None:
    args = sys.argv[1:]
    old_src = None
    run = "--run" in args
    if run:
        args.remove("--run")
    if "--before" in args:
        at = args.index("--before")
        old_src = str(Path(args[at + 1]).resolve())
        del args[at : at + 2]
    n = int(args[0]) if args else 10
    env = dict(os.environ)
    envs = {"after": env}
    if old_src:
        envs = {"before": {**env, "PYTHONPATH": os.pathsep.join([old_src, env.get("PYTHONPATH", "")])}, "after": env}
    load_before = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        make_ledger(db, env)
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "trialbook runs": [*trialbook(), "runs", "--db", str(db)],
            "trialbook show base": [*trialbook(), "show", "base", "--db", str(db)],
            "trialbook compare --help": [*trialbook(), "compare", "--help"],
        }
        if run:
            tasks = Path(tmp) / "tasks"
            shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "tasks" / "plain-bugfix",
                            tasks / "plain-bugfix")  # fmt: skip
            cmd = [*trialbook(), "run", str(tasks), "--run", "r", "--agent", "oracle", "--replace", "--json",
                   "--db", str(db), "--runs-dir", str(Path(tmp) / "runs")]  # fmt: skip
            for one in envs.values():  # the image built, the daemon's caches warm
                subprocess.run(cmd, check=True, capture_output=True, env=one)
            commands["trialbook run (1 oracle trial, plain-bugfix)"] = cmd
        out: dict[str, object] = {}
        for name, cmd in commands.items():
            envs_now = envs if name != "python -c pass (floor)" else {"after": env}
            is_run = name.startswith("trialbook run (")
            rows = timed(cmd, n, envs_now, same_output=not is_run, runs=Path(tmp) / "runs" if is_run else None)
            out[name] = rows["after"] if len(rows) == 1 else rows
    floor = out["python -c pass (floor)"]
    for row in out.values():
        for one in row.values() if "after" in row else [row]:  # type: ignore[union-attr]
            one["wall_over_floor_s"] = round(one["wall_median_s"] - floor["wall_median_s"], 3)  # type: ignore
    out["load_average_before_after"] = [load_before, [round(x, 2) for x in os.getloadavg()]]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()

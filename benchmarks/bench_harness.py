"""Harness speed on the real Docker daemon (run by hand: `python benchmarks/bench_harness.py`; prints a table).

The same trivial task (write a file, test it, reward 1) run side by side at concurrency 1, 2 and 4:
- bare: `docker run --rm --network none IMAGE sh -c '<solve>; <test>'`, N of them through a pool of
  `concurrency` threads;
- trialbook: N full trials through the runner (`harness.run.execute.execute`: container with labels and
  limits, oracle agent, the agent's change carried to a fresh verifier container (the default
  verifier isolation), reward read back, containers removed, ledger row + trial folder written),
  with the warm pool (default) and, unless --no-cold, without it (`--no-warm-pool`).
The task's image is a git working tree, as a real repository task's is (verifier isolation diffs it).
Each concurrency runs `--rounds` rounds of one block of `--trials` trials per way, the ways interleaved and each
first in turn (round 0: bare, trialbook, cold, ...; round 1: trialbook, cold, ..., bare), so all see the same
machine load and none always follows another's background teardown (a block also starts SETTLE_S after the last
ended). A figure is the median wall time per trial over the rounds; the ratio is trialbook / bare of those medians,
and the paired ratios are each round's trialbook block over that round's bare block (their median, least and
most: the spread the machine's noise gives). The 1-minute load average at the end of each concurrency's rounds is
printed beside it: on a shared machine it matters. `--json` prints the rows as JSON instead of the table.

`--cpu` (a local daemon on Linux) also gives the CPU seconds per trial of each way, by whom: dockerd (with
the processes it re-executes itself as: archive copies, the network hook), containerd (with the shim
invocations it reaps), and "shims" (the
containerd shims with everything they ran: runc, the containers' and the execs' processes; counted when a
removed container's shim exits and PID 1 reaps it, so each block waits 2 s for them), and this process
(trialbook's Python) or the `docker` CLI (bare); then "machine", every core's busy time per trial (what the
kernel's own threads spend on namespaces and cgroups included; other load on the machine too). With two cores
saturated (concurrency >= 2) the CPU per trial decides the wall time, so the ratio follows it; and "steal", the time
a virtual machine's host gave its cores to others while they had work (a noisy neighbour slows a block's wall time and
even its CPU seconds, which is why a paired ratio compares blocks of one round). `--no-channel`:
trialbook as before the containers' command channel (sandbox/channel.py), every command a `docker exec`, every copy
through the daemon.

`--floor` also times, interleaved with the others, the least any trial with verifier isolation can cost: two
containers per trial created as the harness creates them (no network stack, limits, no log), each running
`true` and removed once it exited, nothing else. `--isolation container` runs the task with `[verifier]
isolation = "container"` (graded in the agent's own container: one container a trial, as the bare run; with
`--task`, written into the copy's task.toml).

`--before SRC` (an older checkout's src folder) adds two more ways, interleaved: `trialbook run` of the task by
that tree's CLI and by this one's, each in a process of its own (start-up included), n attempts at the concurrency;
their paired ratio after/before per round is the per-trial cost a change added, measured in one run.

`--task DIR`: a real task folder instead of the trivial task (e.g. examples/tasks/plain-bugfix: its oracle solution,
its test.sh running pytest, graded per test when it lists FAIL_TO_PASS / PASS_TO_PASS, the verifier's canaries and
witness included as `trialbook run` runs them); the bare loop then does the same work in one container,
`docker run --rm --network none -v DIR/solution:/solution:ro -v DIR/tests:/tests:ro IMAGE bash -c 'bash
/solution/solve.sh && bash /tests/test.sh; cat /logs/verifier/reward.txt'` (the solution applied, the same pytest
command run), and each way must resolve every trial.

`--one-container` (with `--task`): also trialbook with the task's `[verifier] isolation = "container"`, interleaved
(the agent's own container graded: no second container, no diff carried), so the CPU the verifier's second container
costs shows by difference.

`--runtime` (default auto, as `trialbook run`): the OCI runtime of trialbook's containers and the floor's; the bare
`docker run` uses the daemon's default (runc), as a user's does. `auto` is crun where the daemon has it
(sandbox/docker.py AUTO_RUNTIME), which saves ~0.03 CPU s a container lifecycle whoever starts it, so
`--same-runtime` also times the bare loop as `docker run --runtime <that runtime>`, interleaved: the ratio
against it is what trialbook's own work costs, the runtime's gain set aside.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from trialbook.harness.placement.executors import LocalExecutor
from trialbook.harness.run.config import PlannedTrial, RunConfig
from trialbook.harness.run.execute import execute
from trialbook.harness.run.stack import connect
from trialbook.ledger.store import Ledger
from trialbook.records import Run
from trialbook.sandbox import DockerEngine
from trialbook.tasks import TaskSpec, load_task

# before each block: what the last one left to the machine in the background (the kernel's namespace and cgroup
# teardown, containerd's cleanup of the exited shims) ends first, rather than being charged to the next way
SETTLE_S = 1.0
WHOLE_MACHINE = ("machine", "steal")  # cpu_now's figures that are not a process's
SOLVE = "cd /testbed && echo fixed > answer.txt"
TEST = (
    "mkdir -p /logs/verifier && cd /testbed"
    " && if grep -q fixed answer.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt"
)
DOCKERFILE = """FROM trialbook-base:bookworm
WORKDIR /testbed
RUN git init -q && git -c user.name=tb -c user.email=tb@example.invalid commit -q --allow-empty -m init
"""
# `--test-module`: the test a test command the verifier recognises (a test module run by python3), so that it runs as
# its own unprivileged uid (verify/privilege.py); the same command in the bare loop
TEST_MODULE = (
    "mkdir -p /logs/verifier && cd /testbed && python3 test_answer.py; rc=$?"
    ' && if [ "$rc" -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt'
)
TEST_MODULE_FILE = (
    'RUN printf \'import sys\\nsys.exit(open("answer.txt").read().strip() != "fixed")\\n\' > test_answer.py\n'
)


def make_task(root: Path, isolation: str = "diff") -> Path:
    task = root / "tasks" / "trivial"
    for sub in ("environment", "tests", "solution"):
        (task / sub).mkdir(parents=True)
    toml = f'[agent]\ntimeout_sec = 60\n[verifier]\ntimeout_sec = 60\nisolation = "{isolation}"\n'
    (task / "task.toml").write_text(toml)
    (task / "instruction.md").write_text("Write 'fixed' to /testbed/answer.txt.\n")
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\n{SOLVE}\n")
    (task / "tests" / "test.sh").write_text(f"#!/bin/bash\n{TEST}\n")
    return task


def isolate(task_dir: Path, isolation: str) -> None:
    """Set the task's `[verifier] isolation` in its task.toml."""
    toml = task_dir / "task.toml"
    text = re.sub(r"(?m)^isolation\s*=.*\n", "", toml.read_text())
    toml.write_text(text.replace("[verifier]\n", f'[verifier]\nisolation = "{isolation}"\n', 1))


def _proc_cpu(pid: int, children: bool = False) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(x) for x in (fields[13:15] if children else fields[11:13]))
    return ticks / os.sysconf("SC_CLK_TCK")


def _pid(comm: str) -> int:
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if (p / "comm").read_text().strip() == comm:
                    return int(p.name)
            except OSError:
                continue
    raise SystemExit(f"--cpu: no {comm} process on this machine (the daemon must be local)")


def cpu_now() -> dict[str, float]:
    """Cumulative CPU seconds: dockerd, containerd, the reaped shims (PID 1's children), this process + its children;
    and `machine`, every core's busy time (/proc/stat: all but idle, iowait and steal), which also holds what no
    process above is charged with (kernel threads tearing down namespaces and cgroups, interrupts)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    dockerd, containerd = _pid("dockerd"), _pid("containerd")
    return {
        "dockerd": _proc_cpu(dockerd) + _proc_cpu(dockerd, children=True),  # with its re-executions
        # with what it reaped: the shim binary it runs to start each container and, containerd 1.6 here, again to
        # clean up after each one ("cleaning up dead shim"), with that one's runc
        "containerd": _proc_cpu(containerd) + _proc_cpu(containerd, children=True),
        "shims": _proc_cpu(1, children=True),
        "client": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
        "machine": (sum(ticks) - ticks[3] - ticks[4] - ticks[7]) / os.sysconf("SC_CLK_TCK"),
        # on a virtual machine, the time its host ran something else while this one had work (a noisy neighbour)
        "steal": ticks[7] / os.sysconf("SC_CLK_TCK"),
    }


def measured(block: Callable[[], float], n: int, cpu: list[dict[str, float]] | None) -> float:
    """Run `block` (its wall time per trial); with `cpu`, append its CPU seconds per trial by whom."""
    before = cpu_now() if cpu is not None else {}
    wall = block() / n
    if cpu is not None:
        time.sleep(2.0)  # the removed containers' shims exit and are reaped
        after = cpu_now()
        cpu.append({k: (after[k] - before[k]) / n for k in after})
    return wall


def bare_block(image: str, n: int, c: int, runtime: str | None = None, task: Path | None = None) -> float:
    """`n` bare `docker run --rm` of the trivial task's solve and test (or with `task`, that folder's solve.sh and
    test.sh, mounted read-only), `c` at once."""
    script = f"{SOLVE}; {TEST}; cat /logs/verifier/reward.txt"
    cmd = ["docker", "run", "--rm", "--network", "none", *(["--runtime", runtime] if runtime else [])]
    if task is None:
        cmd += [image, "sh", "-c", script]
    else:
        cmd += ["-v", f"{task / 'solution'}:/solution:ro", "-v", f"{task / 'tests'}:/tests:ro", image, "bash", "-c"]
        cmd += ["bash /solution/solve.sh && bash /tests/test.sh >/dev/null 2>&1; cat /logs/verifier/reward.txt"]

    def one(_: int) -> None:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        assert out.strip() == "1", out

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t


def floor_block(engine: DockerEngine, image: str, n: int, c: int, runtime: str | None = None) -> float:
    """The floor of any trial with verifier isolation: two containers created as the harness creates them (no
    network stack, limits, no log, its runtime), each running `true` and removed once it exited, nothing else."""
    api = engine.client.api
    host = api.create_host_config(network_mode="none", nano_cpus=10**9, mem_limit="2048m", pids_limit=1024,
                                  log_config={"type": "none"}, runtime=runtime)  # fmt: skip

    def one(_: int) -> None:
        for _container in range(2):
            cid = api.create_container(image, command=["true"], host_config=host, network_disabled=True)["Id"]
            api.start(cid)
            api.wait(cid)
            api.remove_container(cid)

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=c) as pool:
        list(pool.map(one, range(n)))
    return time.perf_counter() - t


def cli_block(src: str, tasks: Path, root: Path, n: int, c: int, tag: str) -> float:
    """`trialbook run` of the task, n attempts at concurrency c, by the CLI of the tree at `src` (--before: an older
    checkout's src folder against this one's), in a process of its own: its start-up is in the figure."""
    env = {**os.environ, "PYTHONPATH": src}
    cmd = [sys.executable, "-c", "from trialbook.cli import main; main()", "run", str(tasks), "--agent", "oracle",
           "--attempts", str(n), "--concurrency", str(c), "--run", f"bench-{tag}", "--runs-dir",
           str(root / f"runs-{tag}"), "--db", str(root / f"cli-{tag}.db"), "--json"]  # fmt: skip
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    assert out.returncode == 0 and json.loads(out.stdout)["resolved"] == n, (tag, out.stderr[-2000:])
    return wall


def trialbook_block(
    ledger: Ledger, engine: DockerEngine, spec: TaskSpec, root: Path, n: int, c: int, warm: bool, tag: str,
    runtime: str = "auto",
) -> float:  # fmt: skip
    name = f"bench-{tag}"
    config = RunConfig(tasks_dir=str(spec.path.parent), agent="oracle", concurrency=c, runs_dir=str(root / "runs"),
                       warm_pool=warm, runtime=runtime)  # fmt: skip
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name=name, config=config.model_dump()), replace=True)
    plans = [PlannedTrial(spec, a) for a in range(n)]
    t = time.perf_counter()
    tally = execute(ledger, LocalExecutor(engine), run_id, name, config, plans)
    wall = time.perf_counter() - t
    assert tally.resolved == n, f"{tally} (see {root / 'runs' / name})"
    return wall


def table(rows: list[dict[str, float]], cold: bool, cpu: bool = False, floor: bool = False, same: bool = False) -> str:
    head = ["concurrency", "bare s/trial", "trialbook s/trial", "ratio", "paired ratios median (min-max)"]
    head += ["bare same runtime s/trial", "ratio"] if same else []
    head += ["--no-warm-pool s/trial", "ratio"] if cold else []
    head += ["floor s/trial", "ratio"] if floor else []
    one = "one_container_s" in rows[0]
    head += ["one container s/trial"] if one else []
    before = "cli_before_s" in rows[0]
    head += ["run CLI before/after s/trial", "paired after/before median (min-max)"] if before else []
    who = ("dockerd", "containerd", "shims", "client")
    if cpu:
        head += [f"CPU {w} bare/tb" for w in who] + ["CPU s/trial bare/tb", "ratio", "machine bare/tb", "ratio"]
        head += ["steal bare/tb"]
        head += ["CPU s/trial floor", "machine floor"] if floor else []
        head += ["CPU s/trial one container", "machine one container"] if one else []
    head += ["load avg (1 min)"]
    lines = [head]
    for r in rows:
        line = [f"{r['concurrency']:.0f}", f"{r['bare_s']:.3f}", f"{r['trialbook_s']:.3f}", f"{r['ratio']:.2f}"]
        line += [f"{r['paired_ratio']:.2f} ({r['paired_min']:.2f}-{r['paired_max']:.2f})"]
        line += [f"{r['same_s']:.3f}", f"{r['same_ratio']:.2f}"] if same else []
        line += [f"{r['cold_s']:.3f}", f"{r['cold_ratio']:.2f}"] if cold else []
        line += [f"{r['floor_s']:.3f}", f"{r['floor_ratio']:.2f}"] if floor else []
        line += [f"{r['one_container_s']:.3f}"] if one else []
        if before:
            line += [f"{r['cli_before_s']:.3f}/{r['cli_after_s']:.3f}"]
            line += [f"{r['after_before_paired']:.2f} ({r['after_before_min']:.2f}-{r['after_before_max']:.2f})"]
        if cpu:
            line += [f"{r[f'cpu_bare_{w}_s']:.3f}/{r[f'cpu_trialbook_{w}_s']:.3f}" for w in who]
            bare, tb = r["cpu_bare_s"], r["cpu_trialbook_s"]
            line += [f"{bare:.3f}/{tb:.3f}", f"{tb / bare:.2f}"]
            bare, tb = r["cpu_bare_machine_s"], r["cpu_trialbook_machine_s"]
            line += [
                f"{bare:.3f}/{tb:.3f}",
                f"{tb / bare:.2f}",
                f"{r['cpu_bare_steal_s']:.3f}/{r['cpu_trialbook_steal_s']:.3f}",
            ]
            line += [f"{r['cpu_floor_s']:.3f}", f"{r['cpu_floor_machine_s']:.3f}"] if floor else []
            line += [f"{r['cpu_one_s']:.3f}", f"{r['cpu_one_machine_s']:.3f}"] if one else []
        lines.append([*line, f"{r['load_1min']:.1f}"])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths, strict=True)) for line in lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=32, help="trials per block")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per concurrency")
    ap.add_argument("--concurrency", default="1,2,4")
    ap.add_argument("--no-cold", action="store_true", help="skip trialbook without the warm pool")
    ap.add_argument("--json", action="store_true", help="rows as JSON instead of the table")
    ap.add_argument("--test-module", action="store_true", help="the test as a test module python3 runs (TEST_MODULE)")
    ap.add_argument("--cpu", action="store_true", help="also CPU s per trial by process (a local daemon only)")
    ap.add_argument(
        "--no-channel",
        action="store_true",
        help="trialbook without the containers' command channel (every command an exec, as before it)",
    )
    ap.add_argument(
        "--floor",
        action="store_true",
        help="also two bare API container lifecycles per trial (the floor of verifier isolation), interleaved",
    )
    ap.add_argument(
        "--isolation",
        choices=("diff", "container"),
        help="the task's [verifier] isolation (default: diff; with --task, the task's own): \"container\" grades the"
        " agent's own container (one container a trial)",
    )
    ap.add_argument(
        "--task", type=Path, help="a real task folder (its oracle solution and tests) instead of the trivial one"
    )
    ap.add_argument(
        "--one-container",
        action="store_true",
        help='with --task: also trialbook with isolation = "container" (one container a trial), interleaved',
    )
    ap.add_argument(
        "--before",
        help="the src folder of an older checkout: `trialbook run` by its CLI and by this tree's, interleaved with the"
        " other ways (the verifier's cost per trial before and after, in one run)",
    )
    ap.add_argument("--runtime", default="auto", help="trialbook's (and the floor's) OCI runtime: auto, default, NAME")
    ap.add_argument(
        "--same-runtime",
        action="store_true",
        help="also the bare loop on trialbook's runtime (docker run --runtime), interleaved",
    )
    args = ap.parse_args()
    if args.test_module:
        global TEST, DOCKERFILE
        TEST, DOCKERFILE = TEST_MODULE, DOCKERFILE + TEST_MODULE_FILE
    levels = [int(x) for x in args.concurrency.split(",")]
    cold = not args.no_cold
    rows: list[dict[str, float]] = []
    same = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one_spec = None
        if args.task:  # a copy: trialbook_block's tasks_dir is the folder above it
            task_dir = root / "tasks" / args.task.resolve().name
            shutil.copytree(args.task, task_dir)
            if args.isolation:
                isolate(task_dir, args.isolation)
            spec, bare_task = load_task(task_dir), task_dir
            if args.one_container:  # its own tasks folder: trialbook_block's tasks_dir
                one_dir = root / "tasks-one" / task_dir.name
                shutil.copytree(task_dir, one_dir)
                isolate(one_dir, "container")
                one_spec = load_task(one_dir)
        else:
            spec, bare_task = load_task(make_task(root, args.isolation or "diff")), None
        engine = connect()
        engine.channels = not args.no_channel
        image, _ = engine.ensure_image(
            spec.task_id, None, spec.dockerfile.parent, spec.environment_hash, "bench", False
        )
        ledger = Ledger(str(root / "bench.db"))
        runtime = engine.runtime_for(args.runtime)  # None: the daemon's default
        same = args.same_runtime and runtime is not None
        print(f"trialbook's runtime: {runtime or 'the daemon default'}; bare: the daemon default"
              + (f", and {runtime} (--same-runtime)" if same else ""), flush=True)  # fmt: skip
        try:
            bare_block(image, 2, 1, task=bare_task)  # warm-up: image layers in the page cache, imports done
            trialbook_block(ledger, engine, spec, root, 2, 1, True, "warmup")
            n = args.trials
            for c in levels:
                bare, tb, tb_cold, floor, bare_same = [], [], [], [], []
                cpu_bare: list[dict[str, float]] | None = [] if args.cpu else None
                cpu_tb: list[dict[str, float]] | None = [] if args.cpu else None
                cpu_floor: list[dict[str, float]] | None = [] if args.cpu and args.floor else None
                one, cpu_one = [], ([] if args.cpu and one_spec else None)
                order = ["bare", "trialbook"] + ["same"] * same + ["cold"] * cold + ["floor"] * args.floor
                order += ["one"] * (one_spec is not None)
                order += ["after", "before"] if args.before else []
                after, before = [], []
                trials = partial(trialbook_block, ledger, engine, spec, root, n, c, runtime=args.runtime)
                for r in range(args.rounds):
                    for way in order[r % len(order) :] + order[: r % len(order)]:  # each way first in turn
                        time.sleep(SETTLE_S)
                        if way == "bare":
                            bare.append(measured(partial(bare_block, image, n, c, task=bare_task), n, cpu_bare))
                        elif way == "trialbook":
                            tb.append(measured(partial(trials, True, f"c{c}-r{r}"), n, cpu_tb))
                        elif way == "same":
                            bare_same.append(bare_block(image, n, c, runtime, bare_task) / n)
                        elif way == "one":
                            block = partial(trialbook_block, ledger, engine, one_spec, root, n, c, True,
                                            f"c{c}-r{r}-one", args.runtime)  # fmt: skip
                            one.append(measured(block, n, cpu_one))
                        elif way in ("after", "before"):
                            src = args.before if way == "before" else str(Path(__file__).resolve().parents[1] / "src")
                            tasks_dir = spec.path.parent
                            (before if way == "before" else after).append(
                                cli_block(src, tasks_dir, root, n, c, f"c{c}-r{r}-{way}") / n
                            )
                        elif way == "cold":
                            tb_cold.append(trials(False, f"c{c}-r{r}-cold") / n)
                        else:
                            floor.append(measured(partial(floor_block, engine, image, n, c, runtime), n, cpu_floor))
                b = statistics.median(bare)
                row = {"concurrency": c, "trials": args.trials, "rounds": args.rounds, "bare_s": round(b, 3)}
                row["trialbook_s"] = round(statistics.median(tb), 3)
                for way, samples in (("bare", cpu_bare), ("trialbook", cpu_tb), ("floor", cpu_floor), ("one", cpu_one)):
                    for who in samples[0] if samples else ():
                        row[f"cpu_{way}_{who}_s"] = round(statistics.median(x[who] for x in samples), 4)
                    if samples:
                        by_process = (sum(v for k, v in x.items() if k not in WHOLE_MACHINE) for x in samples)
                        row[f"cpu_{way}_s"] = round(statistics.median(by_process), 4)
                row["ratio"] = round(row["trialbook_s"] / b, 3)
                paired = sorted(t / x for t, x in zip(tb, bare, strict=True))
                row["paired_ratio"] = round(statistics.median(paired), 3)
                row["paired_min"], row["paired_max"] = round(paired[0], 3), round(paired[-1], 3)
                if same:
                    row["same_s"] = round(statistics.median(bare_same), 3)
                    row["same_ratio"] = round(row["trialbook_s"] / row["same_s"], 3)
                if cold:
                    row["cold_s"] = round(statistics.median(tb_cold), 3)
                    row["cold_ratio"] = round(row["cold_s"] / b, 3)
                if args.before:
                    row["cli_after_s"], row["cli_before_s"] = (
                        round(statistics.median(after), 3),
                        round(statistics.median(before), 3),
                    )
                    pairs = sorted(a / b for a, b in zip(after, before, strict=True))
                    row["after_before_paired"] = round(statistics.median(pairs), 3)
                    row["after_before_min"], row["after_before_max"] = round(pairs[0], 3), round(pairs[-1], 3)
                if one:
                    row["one_container_s"] = round(statistics.median(one), 3)
                if args.floor:
                    row["floor_s"] = round(statistics.median(floor), 3)
                    row["floor_ratio"] = round(row["floor_s"] / b, 3)
                row["load_1min"] = round(os.getloadavg()[0], 1)
                rows.append(row)
        finally:
            engine.clean("bench", images=True)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{args.trials} trials x {args.rounds} rounds per figure (median of the rounds; a paired ratio:"
              " trialbook's block / the bare block of the same round)")  # fmt: skip
        print(table(rows, cold, args.cpu, args.floor, same))


if __name__ == "__main__":
    main()

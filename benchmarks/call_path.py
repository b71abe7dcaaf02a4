"""A trial's call path across packages: how many times code of one package calls into another.

Runs one example trial (`trialbook run examples/tasks --task plain-bugfix --agent oracle`, in a temporary ledger and
runs folder, against this machine's Docker daemon) under `sys.setprofile`/`threading.setprofile` and counts, per
package of `src/trialbook/` (the import contract's units: `verify`, `sandbox`, `tasks`, ... and each root module),
the distinct call sites where code of another package calls a function of it: a site is the caller's file and line.
Two scopes: inside the trial (while `run_trial` is on the thread's stack) and the whole command.

What enters a package: a call of one of its module-level functions or the construction of one of its classes (what
the caller imports by name). A method called on an object the caller was handed (a `Box` through the sandbox seam, a
`TaskSpec`'s property, a verdict's field) is use of that object, not an entry: `--methods` counts those too.

    PYTHONPATH=src python benchmarks/call_path.py [--agent oracle] [--task plain-bugfix] [--json out.json] [--sites]

`--sites` lists every site of the trial scope (caller -> callee) under its package.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TRIAL_ENTRY = "run_trial"  # harness/trial/execution.py: one trial, from its container to its record
CONSTRUCTORS = ("__init__", "__post_init__", "__new__")


def unit(module: str) -> str | None:
    """`trialbook.verify.front` -> `verify`; `trialbook.outcomes` -> `outcomes`; others -> None."""
    parts = module.split(".")
    if parts[0] != "trialbook":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


class CallSites:
    """Cross-package call sites seen by the profiler, per callee package, in the trial and in the whole command."""

    def __init__(self, methods: bool = False) -> None:
        self.methods = methods
        self.trial: dict[str, set[tuple[str, int, str]]] = defaultdict(set)
        self.command: dict[str, set[tuple[str, int, str]]] = defaultdict(set)
        self.lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        method = "." in frame.f_code.co_qualname.replace(".<locals>.", "")
        if method and not self.methods and frame.f_code.co_name not in CONSTRUCTORS:
            return
        callee = unit(frame.f_globals.get("__name__", ""))
        caller_frame = frame.f_back
        if callee is None or caller_frame is None:
            return
        caller = unit(caller_frame.f_globals.get("__name__", ""))
        if caller is None or caller == callee:
            return
        code = caller_frame.f_code
        site = (code.co_filename, caller_frame.f_lineno, f"{caller}.{code.co_name} -> {callee}.{frame.f_code.co_name}")
        in_trial = False
        f: FrameType | None = caller_frame
        while f is not None:
            if f.f_code.co_name == TRIAL_ENTRY and unit(f.f_globals.get("__name__", "")) == "harness":
                in_trial = True
                break
            f = f.f_back
        with self.lock:
            self.command[callee].add(site)
            if in_trial:
                self.trial[callee].add(site)

    @staticmethod
    def counts(sites: dict[str, set[tuple[str, int, str]]]) -> dict[str, int]:
        """Per package: its distinct call sites (caller file and line)."""
        return {pkg: len({(f, line) for f, line, _ in s}) for pkg, s in sites.items()}

    @staticmethod
    def entries(sites: dict[str, set[tuple[str, int, str]]]) -> dict[str, int]:
        """Per package: its distinct functions called from another package (its surface on this path)."""
        return {pkg: len({what.split(" -> ")[1] for _, _, what in s}) for pkg, s in sites.items()}


def run_one(agent: str, task: str, methods: bool = False) -> tuple[CallSites, int]:
    from trialbook.cli import main as trialbook

    sites = CallSites(methods)
    with tempfile.TemporaryDirectory(prefix="tb-callpath-") as tmp:
        argv = ["run", str(REPO / "examples" / "tasks"), "--task", task, "--agent", agent, "--run", "callpath",
                "--db", f"{tmp}/ledger.db", "--runs-dir", f"{tmp}/runs"]  # fmt: skip
        threading.setprofile(sites.profile)
        sys.setprofile(sites.profile)
        sys.argv = ["trialbook", *argv]
        try:
            trialbook()
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]
    return sites, code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agent", default="oracle")
    ap.add_argument("--task", default="plain-bugfix")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--sites", action="store_true")
    ap.add_argument("--methods", action="store_true", help="count method calls on objects handed over too")
    args = ap.parse_args()
    sites, code = run_one(args.agent, args.task, args.methods)
    trial, command = CallSites.counts(sites.trial), CallSites.counts(sites.command)
    entries = CallSites.entries(sites.trial)
    print(f"trialbook run --task {args.task} --agent {args.agent}: exit {code}")
    print("package: call sites in another package that call into it, inside the trial (its distinct functions so")
    print("called) | in the whole command")
    for pkg in sorted(set(trial) | set(command), key=lambda p: (-trial.get(p, 0), -command.get(p, 0), p)):
        print(f"  {pkg:14} {trial.get(pkg, 0):4} ({entries.get(pkg, 0):3}) | {command.get(pkg, 0):4}")
    if args.sites:
        for pkg, found in sorted(sites.trial.items()):
            print(f"\n{pkg}:")
            for f, line, what in sorted(found):
                print(f"  {Path(f).relative_to(REPO / 'src') if f.startswith(str(REPO)) else f}:{line}  {what}")
    if args.json:
        found = {"exit": code, "trial": trial, "trial_functions": entries, "command": command}
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

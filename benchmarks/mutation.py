"""Benchmark: mutation testing of the statistics, the error policy, grading and the training report.

mutmut (dev extra) plants small bugs in one module at a time - a `>=` turned `>`, a constant
changed, a call dropped - and runs the fast tests that cover that module against each mutant. A
mutant the tests fail on is killed; one they pass on survived: a bug the suite would not catch.
Each target runs in its own scratch copy of src/ and tests/ (so the worktree is never mutated),
restricted to its own module(s) and the tests that cover them, because mutation runs are CPU heavy.
Run by hand, one target at a time:
    python benchmarks/mutation.py stats            # or policy, grading, training, all
    python benchmarks/mutation.py --list           # targets, their modules and tests
Prints killed / survived / score per module and the diff of every survivor; `--json FILE` writes them.
Only in-process tests count: a test that starts `trialbook` in a subprocess does not see the mutant.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path(os.environ.get("TRIALBOOK_MUTATION_DIR", "/tmp/trialbook-mutation"))
MUTMUT = str(Path(sys.executable).with_name("mutmut"))

# target -> (files to mutate, relative to the repository root; the fast tests that cover them)
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "policy": (["src/trialbook/outcomes.py"], ["tests/harness/test_policy_classify_table.py",
                                               "tests/ledger/test_outcome_rules.py"]),
    "passk": (["src/trialbook/stats/passk.py"], ["tests/stats/test_stats_passk.py", "tests/stats/test_passk_edges.py",
                                               "tests/stats/test_passk_per_task.py"]),
    "multiple": (["src/trialbook/stats/multiple.py"],
                 ["tests/stats/test_stats_paired.py::test_holm_matches_statsmodels",
                  "tests/stats/test_multiple_edges.py"]),
    "power": (["src/trialbook/stats/power.py"],
              ["tests/stats/test_stats_power.py", "tests/stats/test_power_by_hand.py",
               "tests/stats/test_power_edges.py", "tests/stats/test_superseded_not_counted.py",
               "tests/stats/test_claim_rule_boundary.py"]),
    "kernel": (["src/trialbook/stats/kernel.py", "src/trialbook/stats/paired.py"],
               ["tests/stats/test_stats_kernel_rules.py", "tests/stats/test_stats_paired.py",
                "tests/stats/test_kernel_edges.py", "tests/stats/test_bootstrap_every_resample.py"]),
    "compare": (["src/trialbook/stats/compare.py"],
                ["tests/stats/test_compare_edges.py", "tests/stats/test_claim_rule_boundary.py",
                 "tests/stats/test_stats_compare_cli.py", "tests/stats/test_stats_honest_compare.py",
                 "tests/stats/test_superseded_not_counted.py",
                 "tests/stats/test_stats_passk.py::test_compare_reports_paired_pass_at_k",
                 "tests/stats/test_stats_paired.py::test_a_a_runs_do_not_claim",
                 "tests/stats/test_stats_paired.py::test_anchor_dataset_reproduces_the_seed"]),
    "stalls": (["src/trialbook/training/stalls.py"],
               ["tests/training/test_stall_median_truth.py", "tests/training/test_stall_edges.py",
                "tests/training/test_training_report.py"]),
    "encounters": (["src/trialbook/training/encounters.py"],
                   ["tests/training/test_training_report.py", "tests/training/test_new_task_rate.py",
                    "tests/training/test_encounter_edges.py", "tests/stats/test_stats_kernel_rules.py"]),
    "training": (["src/trialbook/training/analysis.py"],
                 ["tests/training/test_training_report.py", "tests/training/test_analysis_edges.py",
                  "tests/stats/test_stats_kernel_rules.py::test_train_report_takes_short_repo_names_like_compare"]),
    "grading": (["src/trialbook/verify/grading.py"], ["tests/verify"]),
}  # fmt: skip
STATUS = {"killed", "survived", "no tests", "timeout", "suspicious", "skipped", "segfault", "not checked"}


def _scratch(name: str, mutate: list[str], tests: list[str], resume: bool) -> Path:
    work = SCRATCH / name
    if resume and (work / "mutants").is_dir():
        return work  # mutmut skips the mutants judged already (a changed test or source is judged again)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "tests", work / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    # pytest settings (markers, testpaths) without a [tool.mutmut] table, so setup.cfg below is read
    pyproject = (ROOT / "pyproject.toml").read_text()
    (work / "pyproject.toml").write_text(re.sub(r"(?ms)^\[tool\.mutmut\].*?(?=^\[|\Z)", "", pyproject))
    (work / "setup.cfg").write_text(
        "[mutmut]\nsource_paths=src/\n"
        + "only_mutate=\n" + "".join(f"    {m}\n" for m in mutate)
        + "pytest_add_cli_args_test_selection=\n" + "".join(f"    {t}\n" for t in tests)
        + "pytest_add_cli_args=\n    -p\n    no:cacheprovider\n    -q\n"
    )  # fmt: skip
    return work


def _mutmut(work: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # mutmut sets sys.path itself
    env.setdefault("TRIALBOOK_SHARED", str(ROOT.parent / "shared"))
    proc = subprocess.run([MUTMUT, *args], cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode != 0 and args[0] != "run":
        raise SystemExit(f"mutmut {args[0]} failed: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout + proc.stderr


def run_target(name: str, children: int, tests_override: list[str] | None = None,
               only: list[str] | None = None, resume: bool = False) -> dict:  # fmt: skip
    mutate, tests = TARGETS[name]
    tests = tests_override or tests
    missing = [p for p in [*mutate, *tests] if not (ROOT / p.split("::")[0]).exists()]  # a test id: file::name
    if missing:
        raise SystemExit(f"target '{name}': no such file or folder: {', '.join(missing)}")
    work = _scratch(name, mutate, tests, resume)
    started = time.monotonic()
    log = _mutmut(work, "run", "--max-children", str(children), *(only or []))
    elapsed = time.monotonic() - started
    listing = _mutmut(work, "results", "--all", "true")
    modules: dict[str, dict[str, int]] = {}
    survivors: list[dict[str, str]] = []
    for line in listing.splitlines():
        key, _, status = line.strip().rpartition(": ")
        if status not in STATUS:
            continue
        module = key.split(".x_")[0].split(".xǁ")[0]
        counts = modules.setdefault(module, dict.fromkeys(sorted(STATUS), 0))
        counts[status] += 1
        if status not in ("killed", "not checked", "skipped"):
            survivors.append({"mutant": key, "status": status, "diff": _mutmut(work, "show", key).strip()})
    if not modules:
        raise SystemExit(f"mutmut ran no mutant for '{name}':\n{log[-3000:]}")
    for counts in modules.values():
        judged = sum(counts.values()) - counts["skipped"] - counts["not checked"]
        counts["score_pct"] = round(100 * counts["killed"] / judged, 1) if judged else None  # type: ignore[assignment]
    return {"target": name, "modules": modules, "survivors": survivors, "seconds": round(elapsed)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help=f"one or more of: {', '.join(TARGETS)}, all")
    ap.add_argument("--children", type=int, default=1, help="mutants tested at once (default 1)")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--list", action="store_true", help="show the targets and exit")
    ap.add_argument("--tests", nargs="+", help="run these tests instead of the target's own")
    ap.add_argument("--mutants", nargs="+", metavar="GLOB",
                    help="only these mutants (mutmut names: '*x_align*'); the rest count as not checked")  # fmt: skip
    ap.add_argument("--resume", action="store_true",
                    help="keep the target's scratch copy from an earlier run: judge only what is left")  # fmt: skip
    args = ap.parse_args()
    if args.list or not args.targets:
        for name, (mutate, tests) in TARGETS.items():
            print(f"{name}: mutate {' '.join(mutate)}\n    tests {' '.join(tests)}")
        return
    names = list(TARGETS) if args.targets == ["all"] else args.targets
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        raise SystemExit(f"unknown target(s): {', '.join(unknown)} (see --list)")
    results = []
    for name in names:
        res = run_target(name, args.children, args.tests, args.mutants, args.resume)
        results.append(res)
        print(f"== {name} ({res['seconds']} s)")
        for module, c in res["modules"].items():
            print(f"  {module}: {c['killed']} killed, {c['survived']} survived, {c['no tests']} no tests,"
                  f" {c['timeout']} timeout, {c['not checked']} not checked -> {c['score_pct']}% killed")  # fmt: skip
        for s in res["survivors"]:
            print(f"-- {s['mutant']} ({s['status']})\n{s['diff']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

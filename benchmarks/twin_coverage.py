"""Coverage of twins (verify/twins.py) over real SWE-bench Verified tasks: how many FAIL_TO_PASS tests get one.

Not a timing. For each instance of the eight repositories in shared/data/swebench-repos: the test modules its test
patch touches (files named like test modules, verify/canary.TEST_MODULE), each module's text after the test patch (the
base commit's text from the bare repository, `git show`, with the patch's section applied by
verify/sources.apply_section; a new file from nothing), then `twins.choose` with the instance's lists and a fixed
seed, as the harness does when it plants a run's twins. Run by hand:
    python benchmarks/twin_coverage.py [--data DIR] [--seed N] [--jobs N] [--json]
Prints the instances where every / some / no FAIL_TO_PASS test got a twin (none: the old canaries are used), the
tests twinned, the PASS_TO_PASS twins made, per repository, and why each FAIL_TO_PASS test without a twin has none
(this script's own classifier re-runs the steps of twins.choose / functions / trap to say which one refused).
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing import Pool
from pathlib import Path, PurePosixPath
from typing import Any

from trialbook.verify import twins
from trialbook.verify.canary import TEST_MODULE
from trialbook.verify.decoys import _skips
from trialbook.verify.sources import apply_section, patch_sections

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
TEST_NAME = re.compile(r"(?m)^\s*(?:def|class)\s+((?:test|Test)\w*)")  # as verify/sources.taken_names reads
RETRIES = 32  # seeds a refused trap is tried again with, to tell a literal refused by chance from one never changed


@dataclass
class Result:
    instance: str
    repo: str
    skipped: str = ""  # why the instance was not measured ("": measured)
    f2p_ids: int = 0
    f2p_not_pytest: int = 0  # F2P ids not of the form `path::name`
    tests: int = 0  # distinct F2P tests (file, `name` or `Class::name`; parameters dropped)
    twinned: int = 0
    p2p_twins: int = 0
    modules: int = 0
    reasons: dict[str, list[str]] = field(default_factory=dict)  # reason -> the F2P tests without a twin


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)


def _lists(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = json.loads(value)
    return [str(v) for v in value]


def _module_of(path: str, modules: dict[str, Any]) -> str | None:
    """The module of `modules` a test id's path names (as twins._listed matches them)."""
    for file in modules:
        if path == file or path.endswith("/" + file) or file.endswith("/" + path):
            return file
    return None


def _has_expected(stmts: list[ast.stmt], nested: bool) -> bool:
    """Whether a statement among `stmts` (`nested`: at any depth, nested functions aside) is one twins._expected
    takes (an assertion comparing with a literal)."""
    todo: list[ast.AST] = list(stmts)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt) and twins._expected(node) is not None:
            return True
        if nested and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _assertions(func: ast.FunctionDef) -> str:
    """What the top-level assertions of a test without one twins._expected takes compare, the likeliest first."""
    literal = {
        t.id
        for stmt in func.body
        if isinstance(stmt, ast.Assign) and twins._literal(stmt.value)
        for t in stmt.targets
        if isinstance(t, ast.Name)
    }
    params = (
        {a.arg for a in func.args.args} if any("parametrize" in ast.unparse(d) for d in func.decorator_list) else set()
    )
    kinds: set[str] = set()
    for stmt in func.body:
        if isinstance(stmt, ast.Assert):
            test = stmt.test
            if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
                sides = (test.left, test.comparators[0])
                names = {n.id for n in sides if isinstance(n, ast.Name)}
                if names & literal:
                    kinds.add("== a name bound to a literal")
                elif names & params:
                    kinds.add("== a parameter (the literal is in a parametrize table)")
                else:
                    kinds.add("== a computed value")
            elif isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.In | ast.NotIn):
                kinds.add("`in` (a substring or member)")
            else:
                kinds.add("other asserts (truthiness, is None, isinstance, <, !=)")
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            own = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self"
            if name.startswith("assert") and own:
                kinds.add("self.assert* with no literal (or not an equality)")
            elif name.startswith("assert"):
                kinds.add("an assert_* helper (assert_identical, assert_allclose, ...)")
        elif isinstance(stmt, ast.With) and any("raises" in ast.unparse(i.context_expr) for i in stmt.items):
            kinds.add("pytest.raises / warns only")
    order = [
        "== a name bound to a literal",
        "== a parameter (the literal is in a parametrize table)",
        "an assert_* helper (assert_identical, assert_allclose, ...)",
        "`in` (a substring or member)",
        "== a computed value",
        "self.assert* with no literal (or not an equality)",
        "other asserts (truthiness, is None, isinstance, <, !=)",
        "pytest.raises / warns only",
    ]
    return next((k for k in order if k in kinds), "no assertion at top level (helpers, fixtures)")


def _why_trap(source: str, seed: int) -> str:
    """Which step of twins.trap refuses `source` (twins.trap returned None for it)."""
    lines = source.split("\n")
    indent = re.match(r"[ \t]*", lines[0]).group(0)  # type: ignore[union-attr]
    if any(line.strip() and not line.startswith(indent) for line in lines):
        return "a line outside the test's indentation (a multi-line string)"
    try:
        tree = ast.parse("\n".join(line[len(indent) :] for line in lines))
    except (SyntaxError, ValueError):
        return "the test's source does not parse alone"
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        return "not a plain function"
    if _skips(func):
        return "the test names a skip or an xfail"
    before: list[ast.stmt] = []
    for stmt in func.body:
        before.append(stmt)
        if twins._exits(stmt):
            break
    spots = [
        leaf for stmt in before if (found := twins._expected(stmt)) is not None for leaf in twins._leaves(found[0])
    ]
    if not spots:
        if _has_expected(func.body, nested=False):
            return "no top-level assertion with a literal: only after a return or yield"
        if _has_expected(func.body, nested=True):
            return "no top-level assertion with a literal: only nested (with / for / if / try)"
        return "no top-level assertion with a literal: " + _assertions(func)
    for k in range(RETRIES):
        if twins.trap(source, "test_twin", random.Random(seed + k + 1)) is not None:
            return "literal refused by chance (another seed changes it)"
    return "no expected literal can be changed (escapes, hex, empty or None only)"


def _why_missing(text: str, name: str) -> str:
    """Why `name` (`name` or `Class::name`) is not among twins.functions(text)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return "not found in the module: the module does not parse"
    pytestmark = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    ]
    if not twins.functions(text) and any(_skips(node) for node in pytestmark):
        return "not found in the module: its pytestmark skips"
    parts = name.split("::")
    top = Counter(getattr(n, "name", None) for n in tree.body)
    if len(parts) > 2:
        return "not found in the module: a method of a nested class"
    if len(parts) == 2:
        cls_name, meth = parts
        classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls_name]
        if not classes:
            return "not found in the module: no such top-level class"
        if top[cls_name] > 1:
            return "not found in the module: the class is defined more than once"
        if not cls_name.startswith("Test"):
            return "not found in the module: a class not named Test*"
        if _skips(classes[0]):
            return "not found in the module: the class names a skip or an xfail"
        items = [n for n in classes[0].body if getattr(n, "name", None) == meth]
        if not items:
            return "not found in the module: inherited or generated (no def in its class)"
        if isinstance(items[0], ast.AsyncFunctionDef):
            return "not found in the module: an async def"
        if not meth.startswith("test"):
            return "not found in the module: a method not named test*"
        return "not found in the module: other"
    items = [n for n in tree.body if getattr(n, "name", None) == name]
    if not items:
        return "not found in the module: no top-level def (generated, imported or a unittest id)"
    if top[name] > 1:
        return "not found in the module: the function is defined more than once"
    if isinstance(items[0], ast.AsyncFunctionDef):
        return "not found in the module: an async def"
    if not name.startswith("test"):
        return "not found in the module: a function not named test*"
    return "not found in the module: other"


def measure(row: dict[str, Any], repos: Path, seed: int) -> Result:
    out = Result(row["instance_id"], row["repo"])
    repo = repos / (row["repo"].replace("/", "__") + ".git")
    f2p, p2p = _lists(row.get("FAIL_TO_PASS")), _lists(row.get("PASS_TO_PASS"))
    if not repo.is_dir():
        out.skipped = "no shared repository"
        return out
    if f2p is None or p2p is None:
        out.skipped = "no FAIL_TO_PASS / PASS_TO_PASS lists"
        return out
    if not row.get("test_patch"):
        out.skipped = "no test patch"
        return out
    if _git(repo, "cat-file", "-e", f"{row['base_commit']}^{{commit}}").returncode:
        out.skipped = "base commit missing from the shared repository"
        return out
    if not f2p:
        out.skipped = "empty FAIL_TO_PASS list"
        return out
    sections = patch_sections(row["test_patch"])
    modules: dict[str, str] = {}
    unknown: dict[str, str] = {}  # a patch section's path -> why its text is not known
    for path, section in sections.items():
        if not TEST_MODULE.fullmatch(PurePosixPath(path).name):
            unknown[path] = "module can't be known: the file is not named like a test module"
            continue
        new_file = any(line.startswith("--- /dev/null") for line in section[:4])
        base: str | None = None
        if not new_file:
            shown = _git(repo, "show", f"{row['base_commit']}:{path}")
            if shown.returncode:
                unknown[path] = "module can't be known: not at the base commit"
                continue
            base = shown.stdout.decode("utf-8", errors="replace")
        text = apply_section(base, section)
        if text is None:
            unknown[path] = "module can't be known: the test patch does not apply (or removes it)"
            continue
        modules[path] = text
    out.modules = len(modules)
    taken = {n for text in modules.values() for n in TEST_NAME.findall(text)}
    chosen = twins.choose_twins(modules, f2p, p2p, taken, None, random.Random(seed))
    made = {(t.file, t.test) for t in chosen}
    tests: dict[tuple[str, str], str] = {}  # F2P test -> "" (twinned) or why not
    found_in: dict[str, dict[str, tuple[str, str]]] = {}
    for test_id in f2p:
        out.f2p_ids += 1
        path, sep, rest = test_id.partition("::")
        if not sep or not path.endswith(".py"):
            out.f2p_not_pytest += 1
            tests.setdefault(("", test_id), "the F2P id is not of the form path::name")
            continue
        name = rest.split("[", 1)[0]
        file = _module_of(path, modules)
        if file is None:
            why = unknown.get(path, "module can't be known: not in the test patch (the change may edit it)")
            tests.setdefault((path, name), why)
            continue
        key = (file, name)
        if key in tests:
            continue
        if key in made:
            tests[key] = ""
            continue
        if file not in found_in:
            found_in[file] = twins.functions(modules[file])
        found = found_in[file].get(name)
        if found is None:
            tests[key] = _why_missing(modules[file], name)
        elif twins.trap(found[0], "test_twin", random.Random(seed)) is None:
            tests[key] = _why_trap(found[0], seed)
        else:
            tests[key] = "a twin can be made but twins.choose did not (planting does not parse, names used up)"
    out.tests = len(tests)
    out.twinned = sum(1 for why in tests.values() if not why)
    out.p2p_twins = sum(1 for t in chosen if tests.get((t.file, t.test)) != "")
    for (file, name), why in tests.items():
        if why:
            out.reasons.setdefault(why, []).append(f"{file}::{name}" if file else name)
    return out


def _measure(job: tuple[dict[str, Any], Path, int]) -> Result:
    return measure(*job)


def summarize(results: list[Result]) -> dict[str, Any]:
    done = [r for r in results if not r.skipped]
    reasons: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}
    for r in done:
        for why, names in r.reasons.items():
            reasons[why] += len(names)
            examples.setdefault(why, []).extend(f"{r.instance} {n}" for n in names)
    per_repo: dict[str, dict[str, int]] = {}
    for r in results:
        row = per_repo.setdefault(r.repo, {"instances": 0, "skipped": 0, "all": 0, "some": 0, "none": 0})
        row["instances"] += 1
        if r.skipped:
            row["skipped"] += 1
        else:
            row[_share(r)] += 1
    return {
        "instances_read": len(results),
        "skipped": dict(Counter(r.skipped for r in results if r.skipped)),
        "measured": len(done),
        "all_f2p_twinned": sum(1 for r in done if _share(r) == "all"),
        "some_f2p_twinned": sum(1 for r in done if _share(r) == "some"),
        "no_f2p_twinned": sum(1 for r in done if _share(r) == "none"),
        "f2p_ids": sum(r.f2p_ids for r in done),
        "f2p_ids_not_path_name": sum(r.f2p_not_pytest for r in done),
        "f2p_tests": sum(r.tests for r in done),
        "f2p_tests_twinned": sum(r.twinned for r in done),
        "p2p_twins": sum(r.p2p_twins for r in done),
        "modules": sum(r.modules for r in done),
        "reasons": dict(reasons.most_common()),
        "examples": {why: names[:4] for why, names in examples.items()},
        "per_repo": dict(sorted(per_repo.items())),
        "none_twinned": [r.instance for r in done if _share(r) == "none"],
    }


def _share(r: Result) -> str:
    return "all" if r.twinned == r.tests else "some" if r.twinned else "none"


def show(s: dict[str, Any]) -> None:
    skipped = ", ".join(f"{n} {why}" for why, n in s["skipped"].items()) or "none"
    print(f"instances read: {s['instances_read']} (skipped: {skipped}); measured {s['measured']}")
    print(f"  every F2P test twinned: {s['all_f2p_twinned']}")
    print(f"  some F2P tests twinned: {s['some_f2p_twinned']}")
    print(f"  no F2P test twinned:    {s['no_f2p_twinned']} (PASS_TO_PASS twins where any, else the canaries)")
    print(f"F2P ids: {s['f2p_ids']} ({s['f2p_ids_not_path_name']} not of the form path::name)")
    share = s["f2p_tests_twinned"] / max(1, s["f2p_tests"])
    print(f"F2P tests (parameters dropped): {s['f2p_tests']}, twinned {s['f2p_tests_twinned']} ({share:.0%})")
    print(f"P2P twins made: {s['p2p_twins']} (test modules read: {s['modules']})")
    print("\nF2P tests without a twin, by reason:")
    for why, n in s["reasons"].items():
        print(f"  {n:4d}  {why}")
        for example in s["examples"][why][:2]:
            print(f"          e.g. {example}")
    print(f"\n{'repository':<20} {'instances':>9} {'skipped':>7} {'all':>4} {'some':>4} {'none':>4}")
    for repo, row in s["per_repo"].items():
        print(f"{repo:<20} {row['instances']:>9} {row['skipped']:>7} {row['all']:>4} {row['some']:>4} {row['none']:>4}")
    print(f"\nno F2P test twinned: {' '.join(s['none_twinned'])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--data", type=Path, default=DATA, help="the shared data folder (swebench-verified/, swebench-repos/)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (the machine is shared: 1 by default)")
    ap.add_argument("--json", action="store_true", help="the figures as JSON on stdout")
    args = ap.parse_args()
    repos = args.data / "swebench-repos"
    names = {p.name.removesuffix(".git").replace("__", "/", 1) for p in repos.glob("*.git")}
    with (args.data / "swebench-verified" / "instances.jsonl").open() as f:
        rows = [row for line in f if line.strip() and (row := json.loads(line))["repo"] in names]
    jobs = [(row, repos, args.seed) for row in rows]
    if args.jobs > 1:
        with Pool(args.jobs) as pool:
            results = pool.map(_measure, jobs)
    else:
        results = [_measure(job) for job in jobs]
    summary = summarize(results)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    else:
        show(summary)


if __name__ == "__main__":
    main()

"""The layout a newcomer navigates: a module's or package's name says one thing wherever it appears, `harness/` is
packages by concern, and docs/contributing/where.md names one existing place per kind of change (issue 59)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from paths import REPO

SRC = REPO / "src" / "trialbook"

# cli/ parses a command and report/ prints its result: a module there named after the package or module that
# computes it (cli/audit.py, report/audit.py and audit/) is that same thing in another layer, not a second meaning.
MIRRORS = ("cli", "report")

# Names kept in two places outside the mirrors, each for its reason (the test fails when one stops repeating).
KNOWN_BASENAMES: dict[str, str] = {
    "looks": "one table: its rows (ledger/looks.py, the SQL) and what they mean (stats/looks.py, alpha spending)",
    "rewards": "rl/rewards.py re-exports trialbook/rewards.py under the path rl users imported it from",
    "swebench": "named after SWE-bench: its tasks built (tasks/swebench/) and its results read (importers/swebench.py)",
}


def basenames(root: Path = SRC) -> dict[str, list[str]]:
    """Each module's stem and each package's folder name -> where it is (paths relative to `root`)."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        if path.stem not in ("__init__", "__main__"):
            where[path.stem].append(str(path.relative_to(root)))
    for init in sorted(root.rglob("__init__.py")):
        if init.parent != root:
            where[init.parent.name].append(str(init.parent.relative_to(root)) + "/")
    return dict(where)


def repeated(root: Path = SRC) -> dict[str, list[str]]:
    """Names that appear more than once outside the mirror layers."""
    found = {}
    for name, places in basenames(root).items():
        outside = [p for p in places if p.split("/")[0] not in MIRRORS]
        if len(outside) > 1:
            found[name] = outside
    return found


def test_no_module_name_means_two_things() -> None:
    """Two `runner.py`s (a test suite runner and the verifier), two `selection.py`s: a reader opens both."""
    found = repeated()
    new = {name: places for name, places in found.items() if name not in KNOWN_BASENAMES}
    assert new == {}, "rename one of each to say what it is (or keep it in KNOWN_BASENAMES with its reason)"
    assert set(found) >= set(KNOWN_BASENAMES), f"fixed, drop: {sorted(set(KNOWN_BASENAMES) - set(found))}"
    assert all(KNOWN_BASENAMES.values())


def test_a_planted_repeated_module_name_is_found(tmp_path: Path) -> None:
    for rel in ("a/runner.py", "b/runner.py", "a/__init__.py", "b/__init__.py", "cli/a.py", "report/a.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "cli" / "__init__.py").write_text("")
    assert repeated(tmp_path) == {"runner": ["a/runner.py", "b/runner.py"]}  # cli/a.py, report/a.py mirror a/


def test_harness_is_packages_by_concern() -> None:
    """harness/: one trial, a run's lifecycle, placement, workflows; each package says what it is in one line."""
    harness = SRC / "harness"
    assert sorted(p.name for p in harness.glob("*.py")) == ["__init__.py"]
    packages = sorted(p.parent.name for p in harness.glob("*/__init__.py"))
    assert packages == ["placement", "run", "trial", "workflows"]
    for init in [harness / "__init__.py", *harness.glob("*/__init__.py")]:
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert doc and "\n" not in doc, init


# Every kind of change the issue names has exactly one row.
KINDS = (
    "outcome rule", "cheat defence", "container option", "run setting", "start-up check", "importer", "report column",
    "statistic", "agent", "backend", "executor",
)  # fmt: skip


def where_rows() -> list[list[str]]:
    table = (REPO / "docs" / "contributing" / "where.md").read_text()
    return [
        [c.strip() for c in line.strip("|").split(" | ")] for line in table.splitlines() if line.startswith("| a new ")
    ]


def defines(path: Path, name: str) -> bool:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
            return True
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def test_where_does_my_change_go_names_one_place_that_exists() -> None:
    rows = where_rows()
    for kind in KINDS:
        assert sum(row[0].startswith(f"a new {kind}") for row in rows) == 1, kind
    for change, place, _follows, test in rows:
        m = re.match(r"`(src/trialbook/[\w/]+\.py)`: `(\w+)`", place)
        assert m, f"{change}: the place starts with `src/trialbook/FILE.py`: `NAME`"
        assert place.count("src/trialbook/") == 1, f"{change}: one place"
        path = REPO / m[1]
        assert path.is_file() and defines(path, m[2]), f"{change}: {m[1]} defines no {m[2]}"
        tests = re.findall(r"`(tests/[\w/.]+)`", test)
        assert tests and all((REPO / t).exists() for t in tests), f"{change}: {tests}"


# What one trial (harness/trial/) may import of the packages it runs through: the verifier through its one door
# (front.TrialVerifier) and the types it passes on; the sandbox through the seam's types and the two calls that name
# a container (benchmarks/call_path.py measures the same at run time: each package entered at <= 2 call sites).
TRIAL_IMPORTS = {
    "verify": {"TrialVerifier", "Verdict", "IsolationError"},
    "sandbox": {"Backend", "Box", "BoxSpec", "UNROUTABLE", "Mount", "Prepare", "LABEL_RUN", "LABEL_TASK", "LABEL_TRIAL",
                "slug"},
}  # fmt: skip


def _names_imported(folder: Path, package: str) -> set[str]:
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"trialbook.{package}"):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                assert not [a for a in node.names if a.name.startswith(f"trialbook.{package}")], path
    return names


def test_a_trial_enters_the_verifier_through_one_door() -> None:
    for package, allowed in TRIAL_IMPORTS.items():
        extra = _names_imported(SRC / "harness" / "trial", package) - allowed
        assert not extra, f"harness/trial/ imports {sorted(extra)} from {package}/: go through its door"

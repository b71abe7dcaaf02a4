"""The house a newcomer reads: a short README, one name per thing, a typed trial state, and a "where does my
change go" table with a row per kind of change. Each test says which rule it keeps; the docs' own paths,
examples and site build are pinned in tests/docs/, the layering in tests/test_import_contract.py and bare
policy names in tests/test_error_kinds.py."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from paths import REPO

SRC = REPO / "src" / "trialbook"

# Public top-level names defined in two modules today, each a rename still to do: the test fails when a new
# one appears, and when one of these is gone (so its line here goes too).
KNOWN_TWICE: set[str] = {
    "Attempts", "Endpoint", "Engine", "TrialFiles", "TrialbookEnv", "Turn", "clean", "list_trials", "main",
    "read_instances", "reading", "signatures", "task_ids", "trial_files", "watch",
}  # fmt: skip


def defined_twice(root: Path = SRC) -> dict[str, list[str]]:
    """Public classes and functions defined at the top level of more than one module: name -> modules."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(root)))
    return {name: paths for name, paths in where.items() if len(paths) > 1}


def test_the_readme_is_a_front_door_not_a_notebook() -> None:
    """What it is, set-up, a tour and links; the rest is in docs/ (mkdocs) and history in CHANGELOG.md."""
    assert len((REPO / "README.md").read_text().splitlines()) <= 200


def test_no_new_name_means_two_things() -> None:
    """A name defined in two modules (two `Rule`s, two `artifacts_of`, two `Plan`s) makes a reader open both."""
    found = defined_twice()
    new = {name: paths for name, paths in found.items() if name not in KNOWN_TWICE}
    assert new == {}, "rename one of each to say what it is"
    assert set(found) >= KNOWN_TWICE, f"fixed, drop from KNOWN_TWICE: {sorted(KNOWN_TWICE - set(found))}"


def test_the_renamed_collisions_stay_single() -> None:
    found = defined_twice()
    for name in ("Rule", "artifacts_of", "Plan", "Verdict", "RunListing"):
        assert name not in found
    for module in ("results.py", "summary.py", "policy.py"):
        assert len(list(SRC.rglob(module))) <= 1, module


def test_the_grep_finds_a_planted_twin(tmp_path) -> None:
    (tmp_path / "a.py").write_text("class Plan: ...\ndef _helper(): ...\n")
    (tmp_path / "b.py").write_text("def Plan(): ...\ndef _helper(): ...\n")
    assert defined_twice(tmp_path) == {"Plan": ["a.py", "b.py"]}


def test_no_trial_state_is_an_untyped_dict() -> None:
    """A trial's state is `TrialState` (harness/trial/state.py): no parameter named `state` is a bare dict."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            annotation = node.annotation if isinstance(node, ast.arg) and node.arg == "state" else None
            if annotation is not None and ast.unparse(annotation).startswith("dict"):
                found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []


def test_where_does_my_change_go_has_a_row_per_kind_of_change() -> None:
    table = (REPO / "docs" / "contributing" / "where.md").read_text()
    rows = [line for line in table.splitlines() if line.startswith("| a new ")]
    for kind in (
        "outcome rule", "cheat defence", "container option", "run setting", "start-up check", "importer",
        "report column", "backend",
    ):  # fmt: skip
        assert sum(f"| a new {kind}" in row for row in rows) == 1, kind

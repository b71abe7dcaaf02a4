"""The house a newcomer reads: a short README, one name per thing and a typed trial state (the layout and "where
does my change go" are tests/test_house_layout.py). Each test says which rule it keeps; the docs' own paths,
examples and site build are pinned in tests/docs/, the layering in tests/test_import_contract.py and bare
policy names in tests/test_error_kinds.py."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from paths import REPO

SRC = REPO / "src" / "trialbook"

# Public top-level names defined in two modules, each kept for its reason (at most 5; issue 59): the test fails
# when a new one appears, and when one of these is gone (so its line here goes too).
KNOWN_TWICE: dict[str, str] = {
    "TrialbookEnv": "public: one environment per trainer framework, imported by module (rl/trl, rl/verifiers_env)",
    "main": "entry points: `trialbook` (cli/__init__.py) and `python -m trialbook.rl.gateway`",
    "Engine": "a container engine (sandbox/box.py) and an inference engine (rl/engines.py): to rename with the "
    "sandbox seam (issue 59, seam) and the gateway (issue 61), both reshaped this round",
    "signatures": "the hack signatures of a patch and the leak moves of commands, both in verify/: renamed with the "
    "verifier's own reshaping (issue 55)",
    "reading": "the CLI's read-only ledger (cli/common.py) and a canary's status (verify/canary.py): the canary's "
    "goes with the verifier's reshaping (issue 55)",
}


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
    assert len(KNOWN_TWICE) <= 5 and all(KNOWN_TWICE.values()), "at most 5 kept, each with its reason"
    assert set(found) >= set(KNOWN_TWICE), f"fixed, drop from KNOWN_TWICE: {sorted(set(KNOWN_TWICE) - set(found))}"


def test_the_renamed_collisions_stay_single() -> None:
    found = defined_twice()
    for name in (
        "Rule",
        "artifacts_of",
        "Plan",
        "Verdict",
        "RunListing",
        "Attempts",
        "Endpoint",
        "TrialFiles",
        "Turn",
        "clean",
        "list_trials",
        "read_instances",
        "task_ids",
        "trial_files",
        "watch",
    ):
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

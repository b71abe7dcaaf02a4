"""The type checker's configuration (pyproject.toml [tool.mypy]): strict over src/trialbook, and an allow-list of
modules with their errors ignored that names only modules that exist (it only shrinks: docs/contributing/testing.md).
scripts/test.sh runs mypy itself in the fast part."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def _mypy() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    return config


def _modules() -> set[str]:
    """Every module of src/trialbook by its dotted name (a package by its own, not `.__init__`)."""
    out = set()
    for path in (SRC / "trialbook").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        out.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return out


def _ours(override: dict[str, Any]) -> list[str]:
    names = override["module"]
    return [n for n in ([names] if isinstance(names, str) else names) if n.split(".")[0] == "trialbook"]


def test_the_allow_list_names_only_modules_that_exist() -> None:
    modules = _modules()
    allowed = [n for o in _mypy()["overrides"] if o.get("ignore_errors") for n in _ours(o)]
    assert allowed, "no allow-list: drop this test's allow-list half with it"
    missing = [n for n in allowed if n not in modules]
    assert not missing, f"allow-listed in pyproject.toml but not a module of src/trialbook: {missing}"
    assert len(allowed) == len(set(allowed)), "a module allow-listed twice"
    assert not [n for n in allowed if n.endswith("*")], "the allow-list names modules one by one, no wildcard"


def test_every_override_of_ours_names_a_module_that_exists() -> None:
    modules = _modules()
    named = [n for o in _mypy()["overrides"] for n in _ours(o)]
    assert named and not [n for n in named if n not in modules]


def test_the_checker_is_strict_over_every_module() -> None:
    config = _mypy()
    assert config["strict"] is True
    assert config["files"] == ["src/trialbook"]
    assert not config.get("ignore_missing_imports"), "name the packages without types, not every import"
    assert not config.get("exclude"), "every module of src/trialbook is checked"
    loosened = {k for o in config["overrides"] for k in o if k != "module"} - {
        "ignore_missing_imports",  # third-party packages without types, named
        "follow_imports",  # those packages skipped whether installed or not (never a module of ours: below)
        "disallow_subclassing_any",  # classes built on those packages' classes
        "ignore_errors",  # the allow-list
    }
    assert not loosened, f"an override loosens {loosened}: fix the code or allow-list the module"
    skipped = [n for o in config["overrides"] if "follow_imports" in o for n in _ours(o)]
    assert not skipped, f"a module of ours is skipped: {skipped}"


def _imported_top_levels() -> set[str]:
    """The top-level names of every absolute import in src/trialbook (lazy imports inside functions included)."""
    import ast

    names: set[str] = set()
    for path in (SRC / "trialbook").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names


def _installed_by_dev() -> set[str]:
    """Top-level import names of the distributions `pip install -e '.[dev]'` brings (transitively): what CI has
    before mypy runs. Everything else (the train extra, llama-cpp-python, verifiers, skyrl) may or may not be
    installed when mypy runs (CI installs it beside the fast part)."""
    import re
    from importlib import metadata

    def requires(dist: str, extras: frozenset[str]) -> list[tuple[str, frozenset[str]]]:
        out = []
        for req in metadata.requires(dist) or []:
            spec, _, marker = req.partition(";")
            wanted = re.findall(r'extra\s*==\s*"([^"]+)"', marker)
            if wanted and not set(wanted) & extras:
                continue
            m = re.match(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[([^\]]*)\])?", spec)
            if m:
                out.append((m.group(1), frozenset(e.strip() for e in (m.group(2) or "").split(",") if e.strip())))
        return out

    seen: set[tuple[str, frozenset[str]]] = set()
    todo = [("trialbook", frozenset({"dev"}))]
    while todo:
        dist, extras = todo.pop()
        key = (dist.lower().replace("_", "-"), extras)
        if key in seen:
            continue
        seen.add(key)
        try:
            todo.extend(requires(dist, extras))
        except metadata.PackageNotFoundError:
            continue
    installed = {name for name, _ in seen}
    # a distribution's own name counts too: CI's model set-up may be upgrading one of them (numpy) while this runs,
    # its dist-info briefly gone or half written (no name: None)
    return {name.replace("-", "_") for name in installed} | {
        top
        for top, dists in metadata.packages_distributions().items()
        if any(d and d.lower().replace("_", "-") in installed for d in dists)
    }


def test_every_optional_import_is_skipped_so_mypy_answers_the_same_with_or_without_it() -> None:
    """CI installs the model's packages (the train extra, llama-cpp-python) while mypy runs: a package imported by
    src/trialbook but not brought by the dev extra must be skipped in [tool.mypy], or mypy's answer depends on
    which finished first (llama_cpp was found missing in CI, present here)."""
    import sys

    third_party = _imported_top_levels() - set(sys.stdlib_module_names) - {"trialbook", "__future__"}
    skipped = {n.split(".")[0] for o in _mypy()["overrides"] if o.get("follow_imports") == "skip" for n in o["module"]}
    optional = sorted(third_party - _installed_by_dev() - skipped)
    assert not optional, f"imported by src/trialbook, not in the dev extra, not skipped in pyproject.toml: {optional}"

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

"""The docs site's nav holds every page, and the dependencies page stays true to pyproject.toml.
(`mkdocs build --strict` itself runs in scripts/test.sh: broken links and anchors fail it.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def nav_pages(entries: list) -> list[str]:
    pages = []
    for entry in entries:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = nav_pages(config["nav"])
    assert len(nav) == len(set(nav)), "a page is twice in the nav"
    docs = ROOT / config["docs_dir"]
    assert [p for p in nav if not (docs / p).is_file()] == []
    assert sorted(str(p.relative_to(docs)) for p in docs.rglob("*.md") if str(p.relative_to(docs)) not in nav) == []


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = project["dependencies"] + [r for extra in project["optional-dependencies"].values() for r in extra]
    names = {normalized(re.match(r"[A-Za-z0-9_.-]+", r)[0]) for r in requirements}
    return names - {"trialbook"}


def test_the_dependencies_page_names_every_declared_dependency():
    page = (ROOT / "docs" / "contributing" / "dependencies.md").read_text()
    rows = [line.split("|")[1] for line in page.split("\n") if line.startswith("| ") and "---" not in line][1:]
    named = {normalized(w) for row in rows for w in re.findall(r"[A-Za-z][\w.-]*", row)}
    assert declared() - named == set(), "pyproject.toml declares packages the page does not explain"
    # and every row names a declared package, or says where else it comes from (Debian, the CI set-up)
    for row in rows:
        words = {normalized(w) for w in re.findall(r"[A-Za-z][\w.-]*", row)}
        assert words & declared() or re.search(r"Debian|CI set-up|torch", row), row

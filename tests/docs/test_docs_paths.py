"""The README and the docs name only files that exist, and say nothing a reader cannot follow.

Checked: every relative link, and every path in inline code that names a file of this repository: one under
`src/trialbook/`, `scripts/`, `docs/`, `benchmarks/`, `examples/` or `.ci/`, a module written from its package
(`verify/grading.py`), a test (`tests/.../test_*.py`, or only its name: `test_stall_edges.py`) or a benchmark
(`bench_*.py`). Other paths are the ones inside a task's sandbox or folder (`tests/test.sh`, `solution/solve.sh`,
`/logs/verifier/reward.txt`, a cheat's `sitecustomize.py`) and are not this repository's. Fenced blocks are
examples, whose commands run in tests/docs/test_console_examples.py. CHANGELOG.md is history and may name files
that are gone.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = "py|md|sh|toml|yml|yaml|json|jsonl|txt|html|png|svg|cfg|ini"
CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
WORD = re.compile(rf"(?<![\w$/.<-])((?:[\w.-]+/)*[\w.-]+(?:\.(?:{SUFFIXES})|/))(?![\w/*<])")
PACKAGES = "|".join(p.name for p in (ROOT / "src" / "trialbook").iterdir() if p.is_dir() and p.name[0] != "_")
TEST_PACKAGES = "|".join(p.name for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name[0] not in "_.")
REPOSITORY_FILE = re.compile(
    rf"^(?:src/trialbook/|trialbook/|scripts/|docs/|benchmarks/|examples/|\.ci/.*[^/]$|(?:{PACKAGES})/)"
    rf"|^tests/(?:{TEST_PACKAGES})/|^tests/(?:[\w-]+/)*test_\w+\.py$|^(?:test|bench)_\w+\.py$"
    r"|^(?:README|CHANGELOG)\.md$"
)
BASES = ("", "src", "src/trialbook")
UNFOLLOWABLE = re.compile(r"STATS\.md|SEED_DIGEST|FIELD_NOTES|\bthe seed\b|\bthe issue\b|\bissues? \d+", re.I)


def pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The page without its fenced blocks."""
    return re.sub(r"^(\s*)(```+|~~~+).*?^\1\2\s*$", "", text, flags=re.M | re.S)


@cache
def names_in_repository() -> frozenset[str]:
    return frozenset(p.name for p in ROOT.rglob("*") if ".git" not in p.parts and ".venv" not in p.parts)


def exists(name: str, page: Path, link: bool = False) -> bool:
    if name.startswith(("http://", "https://", "mailto:")):
        return True
    if "/" not in name:
        return name in names_in_repository() or (link and (page.parent / name).exists())
    candidates = [ROOT / base / name for base in BASES] + [page.parent / name]
    return any(c.exists() for c in candidates)


def named_paths(page: Path) -> set[tuple[str, bool]]:
    """(path, is a link) for each path of this repository the page names outside its fenced blocks."""
    text = prose(page.read_text())
    found = {(m[1], True) for m in LINK.finditer(text) if not m[1].startswith(("http://", "https://", "mailto:"))}
    for span in CODE.finditer(text):
        found |= {(m[1], False) for m in WORD.finditer(span[1]) if REPOSITORY_FILE.search(m[1])}
    return found


def test_every_path_the_docs_name_exists():
    stale = {
        f"{page.relative_to(ROOT)}: {name}"
        for page in pages()
        for name, link in named_paths(page)
        if not exists(name, page, link)
    }
    assert not stale, f"{len(stale)} stale path(s):\n" + "\n".join(sorted(stale))


def test_the_docs_say_nothing_a_reader_cannot_follow():
    """No development notes a reader does not have, no issue numbers: the history is in CHANGELOG.md."""
    found = [
        f"{page.relative_to(ROOT)}:{n}: {m[0]}"
        for page in pages()
        for n, line in enumerate(page.read_text().split("\n"), 1)
        for m in UNFOLLOWABLE.finditer(line)
    ]
    assert not found, "\n".join(found)


def test_the_path_check_finds_stale_paths(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "See `src/trialbook/outcomes.py`, `verify/grading.py`, `test_console_examples.py` and [x](../docs/gone.md),\n"
        "`tests/nowhere/test_gone.py`, `scripts/`, `examples/tasks/`, `harness/gone.py`, `bench_gone.py`,\n"
        "a task's `tests/test.sh` and `solution/solve.sh`, `report.html`, `docs/web-*.png`.\n"
        "```\nsrc/trialbook/not/checked.py\n```\n"
    )
    names = named_paths(page)
    assert ("tests/test.sh", False) not in names and ("src/trialbook/not/checked.py", False) not in names
    assert {n for n, link in names if not exists(n, ROOT / "docs" / "page.md", link)} == {
        "../docs/gone.md",
        "tests/nowhere/test_gone.py",
        "harness/gone.py",
        "bench_gone.py",
    }

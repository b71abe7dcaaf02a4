"""docs/threat-model.md keeps its promise that every guarantee is a named test: each row of its guarantee tables
names a test (`tests/...py::test_x`, or `::test_x` after one) or an attack script of tests/verify/attacks, and each
one it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "threat-model.md"
ATTACKS = ROOT / "tests" / "verify" / "attacks"
TEST_REF = re.compile(r"(tests/[\w/]+\.py)(?:::(test_\w+))?|::(test_\w+)")
ATTACK_REF = re.compile(r"\battacks? ((?:`\w+`(?: \([^)]*\))?(?:, | and )?)+)")
SAME = re.compile(r"^\s*same (test|file)\b", re.I)


def rows() -> list[tuple[str, str]]:
    """(guarantee, its test column) of every table row under a `| Guarantee | Test |` header."""
    out, in_table = [], False
    for line in PAGE.read_text().splitlines():
        if re.match(r"\|(?: # \|)? Guarantee \| Test \|", line):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if in_table and not re.fullmatch(r"[|\s:-]+", line):
            out.append((" | ".join(cells[:-1]), cells[-1]))
    return out


def named(column: str, last_file: str | None) -> tuple[list[tuple[str, str | None]], list[str], str | None]:
    tests, current = [], last_file
    for m in TEST_REF.finditer(column):
        if m.group(1):
            current = m.group(1)
            tests.append((current, m.group(2)))
        elif current is not None:
            tests.append((current, m.group(3)))
    # `attacks `a`, `b` (`shape`)`: the names, not the task shapes in parentheses
    lists = [re.sub(r"\([^)]*\)", "", m.group(1)) for m in ATTACK_REF.finditer(column)]
    attacks = [a for listed in lists for a in re.findall(r"`(\w+)`", listed)]
    return tests, attacks, current


def test_every_guarantee_names_a_test_that_exists():
    table = rows()
    assert len(table) >= 25, "the guarantee tables were not found"
    attack_scripts = {p.stem for p in ATTACKS.rglob("*.sh")}
    last_file = None
    for guarantee, column in table:
        tests, attacks, last_file = named(column, last_file)
        assert tests or attacks or SAME.match(column), f"no test named for: {guarantee[:80]}"
        for path, name in tests:
            source = ROOT / path
            assert source.is_file(), f"{path} (named for: {guarantee[:60]}) does not exist"
            if name is not None:
                assert re.search(rf"^(?:async )?def {name}\b", source.read_text(), re.M), f"{path}::{name} is gone"
        for attack in attacks:
            assert attack in attack_scripts, f"attack {attack!r} (named for: {guarantee[:60]}) has no script"

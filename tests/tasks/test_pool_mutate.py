"""`tasks synthesize`'s candidates (pool/mutate.py): each kind changes what it says, the order is fixed by the seed,
the exclusion list is honoured, and the reference diff restores the original with `git apply`."""

from __future__ import annotations

import ast
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from trialbook.errors import UserError
from trialbook.pool.mutate import KINDS, candidates, mutations_of, source_files, unified_diff
from trialbook.pool.overlap import touched
from trialbook.pool.synthesize import parse_source, read_exclusions, repo_name

SOURCE = '''"""A module."""


def clamp(x, lo, hi):
    """Docstring stays."""
    if x < lo:
        return lo
    total = x + 0
    log("clamp", x)
    return min(x, hi) if x is not None and hi else x


class Box:
    def put(self, item):
        self.items.append(item)
        self.count += 1
        return True
'''


def test_every_kind_changes_what_it_says():
    found = list(mutations_of("pkg/m.py", SOURCE))
    assert {m.kind for m in found} == set(KINDS)
    for m in found:
        ast.parse(m.mutated)
        assert m.original == SOURCE and m.mutated != SOURCE
        assert '"""Docstring stays."""' in m.mutated  # docstrings are never removed
    assert Counter(m.kind for m in found)["flip_boolean"] == 1
    assert "    if x >= lo:" in [ln for m in found if m.kind == "flip_compare" for ln in m.mutated.splitlines()]
    assert "    if not (x < lo):" in [
        ln for m in found if m.kind == "negate_condition" for ln in m.mutated.splitlines()
    ]
    assert "        return False" in [ln for m in found if m.kind == "change_return" for ln in m.mutated.splitlines()]
    assert "    total = x - 0" in [ln for m in found if m.kind == "flip_arith" for ln in m.mutated.splitlines()]
    swapped = [ln for m in found if m.kind == "swap_arguments" for ln in m.mutated.splitlines()]
    assert "    log(x, 'clamp')" in swapped
    removed = [m for m in found if m.kind == "remove_statement"]
    assert {m.mutated.count("\n") for m in removed} == {SOURCE.count("\n") - 1}
    assert {m.function for m in found} <= {"clamp", "Box.put"}


def test_order_is_fixed_by_seed_and_spread_over_functions(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(SOURCE)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text("def test_a():\n    assert 1 == 1\n")
    (tmp_path / "setup.py").write_text("x = 1 == 1\n")
    assert source_files(tmp_path, ["tests"]) == ["pkg/m.py"]
    a = [m.key for m in candidates(tmp_path, ["tests"], 1, 100)]
    assert a == [m.key for m in candidates(tmp_path, ["tests"], 1, 100)]
    assert a != [m.key for m in candidates(tmp_path, ["tests"], 2, 100)]
    first_two = candidates(tmp_path, ["tests"], 1, 2)
    assert {m.function for m in first_two} == {"clamp", "Box.put"}  # round robin: one per function first
    assert all(m.function != "clamp" for m in candidates(tmp_path, ["tests"], 1, 100, {"pkg/m.py::clamp"}))
    assert candidates(tmp_path, ["tests"], 1, 100, {"pkg/m.py::put"})[0].function == "clamp"
    assert candidates(tmp_path, ["tests"], 1, 100, {"pkg/m.py"}) == []


def test_reference_diff_restores_the_original_with_git_apply(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for m in mutations_of("pkg/m.py", SOURCE):
        path = tmp_path / "pkg" / "m.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(m.mutated)
        patch = unified_diff(m.path, m.mutated, m.original)
        done = subprocess.run(["git", "-C", str(tmp_path), "apply", "-"], input=patch, text=True, capture_output=True)
        assert done.returncode == 0, (m.key, done.stderr)
        assert path.read_text() == SOURCE
    m = next(x for x in mutations_of("pkg/m.py", SOURCE) if x.function == "Box.put")
    patch = unified_diff(m.path, m.mutated, m.original)
    assert "@@ def clamp(x, lo, hi):" in patch  # the def above the hunk, as git's python diff driver writes it
    assert touched(patch)[1] == {"pkg/m.py::put"}  # the def inside the hunk above the change wins (tasks overlap)


def test_source_and_names(tmp_path):
    assert repo_name(Path("/x/mewwts__addict.git"), None) == "mewwts/addict"
    assert repo_name(Path("/x/plain"), None) == "local/plain"
    with pytest.raises(UserError, match="OWNER/NAME"):
        repo_name(Path("/x"), "no slash")
    with pytest.raises(UserError, match="is not a folder"):
        parse_source(str(tmp_path / "missing@abc"))
    assert parse_source(f"{tmp_path}@abc") == (tmp_path, "abc")
    ex = tmp_path / "ex.txt"
    ex.write_text("# c\na/b:pkg/m.py::clamp\nc/d:x.py\n")
    assert read_exclusions(ex, "a/b") == {"pkg/m.py::clamp"}
    ex.write_text("a/b\n")
    with pytest.raises(UserError, match="excluded as a whole"):
        read_exclusions(ex, "a/b")

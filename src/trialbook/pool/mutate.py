"""Procedural bug candidates from a repository's own code: small AST changes of the kinds SWE-smith uses.

Each candidate changes one expression or statement inside a function of one source file, spliced into the file's
text at the node's position (the rest of the file keeps its formatting, so the fix is a small diff). Kinds:
- `flip_compare`: a comparison operator to its opposite (`==`/`!=`, `<`/`>=`, `in`/`not in`, `is`/`is not`, ...);
- `flip_boolean`: `and` <-> `or`;
- `flip_arith`: `+` <-> `-`, `*` <-> `//`... (a binary arithmetic operator);
- `negate_condition`: the test of an `if`/`while`/conditional expression negated;
- `change_return`: `return X` -> `return None`, `return True` <-> `return False`;
- `remove_statement`: an expression statement, assignment or augmented assignment removed (never a body's only one);
- `swap_arguments`: the first two positional arguments of a call swapped.
The order is deterministic for a seed: candidates are shuffled, then taken one function at a time (round robin), so
a small cap spreads over the code instead of piling onto its first function.
"""

from __future__ import annotations

import ast
import difflib
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HEADER_DEF = re.compile(r"^[ \t]*((class|(async[ \t]+)?def)[ \t].*)$")
KINDS = (
    "flip_compare",
    "flip_boolean",
    "flip_arith",
    "negate_condition",
    "change_return",
    "remove_statement",
    "swap_arguments",
)
COMPARE_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.GtE,
    ast.GtE: ast.Lt,
    ast.Gt: ast.LtE,
    ast.LtE: ast.Gt,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
ARITH_FLIP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}


@dataclass(frozen=True)
class Mutation:
    """One candidate: `path` (relative, posix) changed from `original` to `mutated` text of the whole file."""

    path: str
    kind: str
    function: str  # qualified name of the function changed
    line: int
    original: str
    mutated: str

    @property
    def key(self) -> str:
        return f"{self.path}:{self.line}:{self.kind}"


class _Sites(ast.NodeVisitor):
    """Collects (function, node, kind) for every mutable node inside a function body."""

    def __init__(self) -> None:
        self.found: list[tuple[str, ast.AST, str]] = []
        self.scope: list[str] = []
        self.in_function = 0

    def _enter(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        func = not isinstance(node, ast.ClassDef)
        self.in_function += func
        self._removals(node.body)
        for child in node.body:  # decorators and defaults are left alone
            self.visit(child)
        self.in_function -= func
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _enter  # noqa: N815

    def _add(self, node: ast.AST, kind: str) -> None:
        if self.in_function:
            self.found.append((".".join(self.scope), node, kind))

    def generic_visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE_FLIP:
            self._add(node, "flip_compare")
        elif isinstance(node, ast.BoolOp):
            self._add(node, "flip_boolean")
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITH_FLIP:
            self._add(node, "flip_arith")
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self._add(node.test, "negate_condition")
        if isinstance(node, ast.Return) and node.value is not None:
            value = node.value
            if not (isinstance(value, ast.Constant) and value.value is None):
                self._add(node, "change_return")
        if (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and not any(isinstance(a, ast.Starred) for a in node.args[:2])
        ):
            self._add(node, "swap_arguments")
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                self._removals(body)
        super().generic_visit(node)

    def _removals(self, body: list[ast.stmt]) -> None:
        if len(body) > 1:
            for stmt in body:
                if isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign)) and not _is_docstring(stmt):
                    self._add(stmt, "remove_statement")


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _changed(node: ast.AST, kind: str) -> ast.AST | None:
    """A mutated copy of `node` (None: nothing to change)."""
    new = ast.parse(ast.unparse(node), mode="exec").body[0]
    target: ast.AST = new.value if isinstance(new, ast.Expr) and not isinstance(node, ast.stmt) else new
    if kind == "flip_compare" and isinstance(target, ast.Compare):
        target.ops = [COMPARE_FLIP[type(target.ops[0])]()]
    elif kind == "flip_boolean" and isinstance(target, ast.BoolOp):
        target.op = ast.Or() if isinstance(target.op, ast.And) else ast.And()
    elif kind == "flip_arith" and isinstance(target, ast.BinOp):
        target.op = ARITH_FLIP[type(target.op)]()
    elif kind == "negate_condition" and isinstance(target, ast.expr):
        if isinstance(target, ast.UnaryOp) and isinstance(target.op, ast.Not):
            return target.operand
        return ast.UnaryOp(op=ast.Not(), operand=target)
    elif kind == "change_return" and isinstance(target, ast.Return) and target.value is not None:
        value = target.value
        if isinstance(value, ast.Constant) and isinstance(value.value, bool):
            target.value = ast.Constant(not value.value)
        else:
            target.value = ast.Constant(None)
    elif kind == "swap_arguments" and isinstance(target, ast.Call):
        first, second = target.args[0], target.args[1]
        if ast.dump(first) == ast.dump(second):
            return None
        target.args[0], target.args[1] = second, first
    else:
        return None
    return target


def _splice(text: str, node: ast.AST, kind: str) -> str | None:
    lineno, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if lineno is None or end is None or col is None or end_col is None:
        return None
    # ast offsets are UTF-8 byte columns: work on the lines' bytes
    lines = text.splitlines(keepends=True)
    if kind == "remove_statement":
        first, last = lines[lineno - 1], lines[end - 1]
        if first[:col].strip() or last.encode()[end_col:].strip() not in (b"", b"\\"):
            return None  # shares a line with other code: left alone
        return "".join(lines[: lineno - 1] + lines[end:])
    new = _changed(node, kind)
    if new is None:
        return None
    head: str = "".join(lines[: lineno - 1]) + lines[lineno - 1].encode()[:col].decode(errors="replace")
    tail: str = lines[end - 1].encode()[end_col:].decode(errors="replace") + "".join(lines[end:])
    if isinstance(new, ast.UnaryOp) and isinstance(new.op, ast.Not) and kind == "negate_condition":
        inner = ast.unparse(new.operand)
        simple = isinstance(new.operand, (ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Subscript))
        source = f"not {inner}" if simple else f"not ({inner})"
    else:
        source = ast.unparse(new)
    if "\n" in source:
        return None
    return head + source + tail


def mutations_of(path: str, text: str) -> Iterator[Mutation]:
    """Every candidate of one file whose mutated text still parses and differs from the original."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    sites = _Sites()
    sites.visit(tree)
    seen: set[str] = set()
    for function, node, kind in sites.found:
        try:
            mutated = _splice(text, node, kind)
        except (SyntaxError, ValueError, IndexError, UnicodeError):
            continue
        if mutated is None or mutated == text or mutated in seen:
            continue
        try:
            ast.parse(mutated)
        except SyntaxError:
            continue
        seen.add(mutated)
        yield Mutation(path, kind, function, int(getattr(node, "lineno", 0)), text, mutated)


def source_files(root: Path, tests: list[str]) -> list[str]:
    """The repository's Python files that are code under test: not its tests, setup, docs or examples."""
    skip_dirs = {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "build", "dist"}
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        parts = rel.split("/")
        if parts[0].startswith(".") or any(d in skip_dirs for d in parts[:-1]):
            continue
        name = parts[-1]
        if name in ("setup.py", "conftest.py", "noxfile.py") or name.startswith("test_") or name.endswith("_test.py"):
            continue
        if any(rel == t or rel.startswith(t.rstrip("/") + "/") for t in tests):
            continue
        out.append(rel)
    return out


def candidates(root: Path, tests: list[str], seed: int, limit: int, excluded: set[str] | None = None) -> list[Mutation]:
    """Up to `limit` candidates, shuffled by `seed` and spread round robin over functions. `excluded`: "path" or
    "path::name" entries (an overlap audit's exclusion list) never mutated; a name excludes every function whose
    qualified name has it as a part (`update` excludes `Table.update` and `Table.update.updater`)."""
    excluded = excluded or set()
    every: list[Mutation] = []
    for rel in source_files(root, tests):
        if rel in excluded:
            continue
        text = (root / rel).read_text(errors="replace")
        every += [m for m in mutations_of(rel, text) if not {f"{rel}::{n}" for n in m.function.split(".")} & excluded]
    rng = random.Random(seed)
    rng.shuffle(every)
    rank: dict[str, int] = {}
    order = []
    for i, m in enumerate(every):
        r = rank.get(f"{m.path}::{m.function}", 0)
        rank[f"{m.path}::{m.function}"] = r + 1
        order.append((r, i, m))
    return [m for _, _, m in sorted(order, key=lambda x: (x[0], x[1]))][:limit]


def unified_diff(path: str, before: str, after: str) -> str:
    """A `git apply`-able diff of one file from `before` to `after`."""
    body = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
    )
    old = before.splitlines()
    lines = []
    for line in body:
        hunk = re.match(r"^@@ -(\d+)", line)
        if hunk:  # the enclosing def/class above the hunk in its header, as git's python diff driver writes it
            above = next((x.strip() for x in reversed(old[: int(hunk.group(1)) - 1]) if HEADER_DEF.match(x)), "")
            line = f"{line.rstrip()} {above}\n" if above else line
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)

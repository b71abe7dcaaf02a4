"""The import contract: packages form layers, imports point down (or sideways), and no packages import
each other in a circle. Every `import` counts, including those inside functions and under TYPE_CHECKING:
a lazy import is still a dependency.

Edit LAYERS when a package is added or moved; a module in no row fails the test until it is placed.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from paths import REPO

SRC = REPO / "src" / "trialbook"

# Highest first. A module may import from its own row and the rows below it, never from a row above.
LAYERS: list[tuple[str, ...]] = [
    ("cli", "__main__"),  # __main__: `python -m trialbook`
    ("web", "report"),
    ("harness", "rl", "audit", "training", "stats", "prereg", "importers", "pool"),
    ("agents", "verify", "sandbox", "tasks"),
    ("ledger",),
    # __init__: `import trialbook` (its version)
    ("records", "outcomes", "rewards", "result_types", "errors", "extras", "files", "names", "tokens", "redact",
     "access", "extra_schema", "trajectory", "capped", "__init__"),
]  # fmt: skip

# Known violations, "importer -> imported" units, being fixed (issue 11): each must still occur, so the
# test says when one is gone and its line here can go too.
KNOWN: set[str] = set()


@dataclass(frozen=True)
class Edge:
    src: str  # unit (top-level package or root module) of the importing module
    dst: str
    where: str  # file:line
    statement: str
    src_module: str = ""
    dst_module: str = ""  # the imported module (`from m import sub` counts as m.sub when that is a module)


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path = SRC) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def edges(root: Path = SRC) -> list[Edge]:
    paths = sorted(root.rglob("*.py"))
    modules = {module_name(path, root) for path in paths}
    found = []
    for path in paths:
        name = module_name(path, root)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in dict.fromkeys(targets):
                if target == "trialbook" or target.startswith("trialbook."):
                    where = f"{path.relative_to(root)}:{node.lineno}"
                    found.append(Edge(unit(name), unit(target), where, ast.unparse(node), name, target))
    return found


def layer_of() -> dict[str, int]:
    return {name: i for i, row in enumerate(LAYERS) for name in row}


def describe(edge: Edge, layers: dict[str, int]) -> str:
    return (f"  {edge.where}: {edge.src} (layer {layers.get(edge.src)}) -> {edge.dst} (layer "
            f"{layers.get(edge.dst)}): {edge.statement}")  # fmt: skip


def cycles(all_edges: list[Edge], modules: bool = False) -> list[list[str]]:
    """Strongly connected groups of more than one unit, or module (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for e in all_edges:
        src, dst = (e.src_module, e.dst_module) if modules else (e.src, e.dst)
        if src != dst:
            graph[src].add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_every_module_is_in_a_layer() -> None:
    layers = layer_of()
    missing = sorted({unit(module_name(p)) for p in SRC.rglob("*.py")} - set(layers))
    if missing:
        pytest.fail(f"add to LAYERS in {Path(__file__).name}: {', '.join(missing)}")


def test_imports_point_down_the_layers() -> None:
    layers = layer_of()
    up = [e for e in edges() if e.src in layers and e.dst in layers and layers[e.dst] < layers[e.src]]
    new = [e for e in up if f"{e.src} -> {e.dst}" not in KNOWN]
    if new:
        pytest.fail("imports from a lower layer up to a higher one:\n" + "\n".join(describe(e, layers) for e in new))


def test_no_cycle_between_packages() -> None:
    layers = layer_of()
    all_edges = [e for e in edges() if f"{e.src} -> {e.dst}" not in KNOWN]
    report = []
    for group in cycles(all_edges):
        inside = [e for e in all_edges if e.src in group and e.dst in group and e.src != e.dst]
        report.append(f"cycle {' / '.join(group)}:\n" + "\n".join(describe(e, layers) for e in inside))
    if report:
        pytest.fail("\n".join(report))


def test_no_cycle_between_modules() -> None:
    """Inside a package too: a module imported by its own importees (even lazily) is a circle."""
    all_edges = [e for e in edges() if f"{e.src_module} -> {e.dst_module}" not in KNOWN]
    report = []
    for group in cycles(all_edges, modules=True):
        inside = [e for e in all_edges if e.src_module in group and e.dst_module in group]
        report.append(f"cycle {' / '.join(group)}:\n" + "\n".join(f"  {e.where}: {e.statement}" for e in inside))
    if report:
        pytest.fail("\n".join(report))


def test_known_violations_still_occur() -> None:
    seen = {f"{e.src} -> {e.dst}" for e in edges()} | {f"{e.src_module} -> {e.dst_module}" for e in edges()}
    if not seen >= KNOWN:
        pytest.fail(f"fixed, delete from KNOWN in {Path(__file__).name}: {', '.join(sorted(KNOWN - seen))}")


def test_the_checks_find_a_planted_upward_import_and_cycle(tmp_path: Path) -> None:
    root = tmp_path / "trialbook"
    for name, text in {"ledger/store.py": "from trialbook.cli import app\n",
                       "cli/__init__.py": "from ..ledger import store\n",
                       "stats/a.py": "def f():\n    from trialbook.audit import b\n",
                       "audit/b.py": "import trialbook.stats.a\n"}.items():  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    found = edges(root)
    layers = layer_of()
    assert [describe(e, layers) for e in found if layers[e.dst] < layers[e.src]] == [
        "  ledger/store.py:1: ledger (layer 4) -> cli (layer 0): from trialbook.cli import app"
    ]
    assert sorted(cycles(found)) == [["audit", "stats"], ["cli", "ledger"]]


def test_only_the_ray_executor_imports_ray() -> None:
    """`ray` is an optional extra: one module imports it, and only `make_executor("ray")` imports that module."""
    importers = set()
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "ray" or n.startswith("ray.") for n in names):
                importers.add(str(path.relative_to(SRC)))
    assert importers == {"harness/placement/raycluster.py"}
    users = {e.src_module for e in edges() if e.dst_module == "trialbook.harness.placement.raycluster"}
    assert users == {"trialbook.harness.placement.choice"}

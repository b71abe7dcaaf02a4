"""The sandbox seam is used, not only declared: code outside sandbox/ types against the protocol (`Box`, `Backend`,
`BoxSpec` in sandbox/backend.py) and never names Docker's concrete classes; a backend is picked by its registry
name in one place (harness/run/stack.py connect). Beside tests/test_import_contract.py, by the same AST walk."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from paths import REPO
from trialbook.sandbox import Backend, Box, BoxSpec
from trialbook.sandbox.backend import BACKENDS, backend_class

SRC = REPO / "src" / "trialbook"
CONCRETE = {"DockerEngine", "Sandbox", "PodmanEngine", "FakeSleepBackend", "FakeBox"}
PICKS = "harness/run/stack.py"  # the one place that picks a backend (by name, through the registry)


def _names(node: ast.AST) -> set[str]:
    """Every name a node mentions: identifiers, attributes, imported names and quoted annotations."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id)
        elif isinstance(n, ast.Attribute):
            found.add(n.attr)
        elif isinstance(n, ast.alias):
            found.add(n.name.rsplit(".", 1)[-1])
            found.add(n.asname or "")
        elif isinstance(n, ast.arg | ast.AnnAssign) and isinstance(n.annotation, ast.Constant):
            found |= _names(ast.parse(str(n.annotation.value), mode="eval"))
        elif isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and isinstance(n.returns, ast.Constant):
            found |= _names(ast.parse(str(n.returns.value), mode="eval"))
    return found


def concrete_names(root: Path = SRC) -> list[str]:
    """`file:line name` for each concrete sandbox class named outside sandbox/ (but at PICKS)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("sandbox/") or rel == PICKS:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.stmt):
                for name in sorted(_names(node) & CONCRETE):
                    out.append(f"{rel}:{node.lineno} {name}")
    return sorted(set(out))


def test_no_code_outside_sandbox_names_a_concrete_backend() -> None:
    assert concrete_names() == [], "type against sandbox.Box / sandbox.Backend (sandbox/backend.py)"


def test_the_walk_finds_a_planted_name(tmp_path: Path) -> None:
    (tmp_path / "sandbox").mkdir()
    (tmp_path / "sandbox" / "docker.py").write_text("class DockerEngine: ...\n")
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "a.py").write_text(
        "from trialbook.sandbox import Box\ndef run(box: Box) -> None: ...\n"
        "def later(box: 'Sandbox') -> None: ...\n"
        "import trialbook.sandbox.docker as d\nengine = d.DockerEngine()\n"
    )
    assert concrete_names(tmp_path) == ["agents/a.py:3 Sandbox", "agents/a.py:5 DockerEngine"]


def test_every_registered_backend_implements_the_protocol() -> None:
    """What a trial, its agent and its verifier call on a backend is on the protocol, with the protocol's signature."""
    for name in BACKENDS:
        cls = backend_class(name)
        for method in ("start", "ahead", "ensure_image", "clean", "open_pool", "close_pool", "runtime_for"):
            want = list(inspect.signature(getattr(Backend, method)).parameters)
            assert list(inspect.signature(getattr(cls, method)).parameters)[: len(want)] == want, (name, method)


def test_a_box_spec_is_all_a_start_takes() -> None:
    """Backend.start(spec, name, stop): the task's settings travel as one BoxSpec, not 13 arguments."""
    assert list(inspect.signature(Backend.start).parameters) == ["self", "spec", "name", "stop"]
    assert list(inspect.signature(Backend.ahead).parameters) == ["self", "spec"]
    assert {"image", "labels", "cpus", "memory_mb", "pids_limit", "network", "prepare", "mounts"} <= set(
        BoxSpec.__dataclass_fields__
    )
    assert "exec" in dir(Box)

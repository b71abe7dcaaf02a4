"""The backend seam (sandbox/backend.py): every registered backend implements Backend and Box, call for call."""

from __future__ import annotations

import inspect

import pytest

from trialbook.sandbox.backend import BACKENDS, Backend, Box, BoxBase, UnknownBackend, backend_class
from trialbook.sandbox.box import Sandbox
from trialbook.sandbox.docker import DockerEngine


def _members(proto: type) -> list[str]:
    return [n for n, v in vars(proto).items() if callable(v) and not n.startswith("_")]


def _params(fn: object) -> list[str]:
    return [p for p in inspect.signature(fn).parameters if p != "self"]  # type: ignore[arg-type]


def _conforms(impl: type, proto: type) -> list[str]:
    """The protocol's calls `impl` lacks, or takes with other parameters (names and order: callers pass them by
    keyword as often as not)."""
    bad = []
    for name in _members(proto):
        fn = getattr(impl, name, None)
        if fn is None:
            bad.append(f"{name}: missing")
        elif _params(fn)[: len(_params(getattr(proto, name)))] != _params(getattr(proto, name)):
            bad.append(f"{name}{inspect.signature(fn)} != {inspect.signature(getattr(proto, name))}")
    return bad


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_every_registered_backend_implements_the_protocol(name: str) -> None:
    cls = backend_class(name)
    assert _conforms(cls, Backend) == []
    assert isinstance(cls.name, str) and cls.name == name
    assert cls.capabilities.network_off  # the verifier's isolation needs it of every backend


def test_docker_sandbox_and_the_base_box_implement_box() -> None:
    assert _conforms(Sandbox, Box) == []
    assert _conforms(BoxBase, Box) == []
    assert backend_class("docker") is DockerEngine


def test_the_protocols_catch_a_missing_or_renamed_call() -> None:
    class Half:
        def exec(self, argv: list[str], timeout: float) -> None: ...

    bad = _conforms(Half, Box)
    assert any(b.startswith("exec(") for b in bad)
    assert "remove: missing" in bad


def test_an_unknown_backend_is_one_line_naming_the_known_ones() -> None:
    with pytest.raises(UnknownBackend) as err:
        backend_class("kubernetes")
    assert "unknown sandbox backend 'kubernetes'" in str(err.value)
    assert "docker" in str(err.value)
    assert "\n" not in str(err.value)


def test_the_base_box_refuses_what_it_cannot_do_as_an_infrastructure_error() -> None:
    from trialbook.sandbox.backend import Unsupported
    from trialbook.sandbox.box import SandboxError

    box = BoxBase("b", "1")
    with pytest.raises(Unsupported) as err:
        box.changes()
    assert isinstance(err.value, SandboxError) and err.value.kind == "DaemonError"
    assert box.finish("true", 1) is None and box.snapshot("/w", None) is False  # type: ignore[arg-type]


def test_every_call_the_verifier_and_the_trial_make_on_a_box_is_in_the_protocol() -> None:
    """The verifier's needs, read from its source: a call on a box that Box does not declare would pass on Docker and
    break on every other backend."""
    import re
    from pathlib import Path

    import trialbook

    src = Path(trialbook.__file__).parent
    files = [*(src / "verify").glob("*.py"), src / "harness" / "trial" / "execution.py", *(src / "agents").glob("*.py")]
    used = set()
    for f in files:
        used |= set(re.findall(r"\b(?:box|vbox|sandbox)\.([a-z_]+)\b", f.read_text()))
    declared = set(Box.__annotations__) | set(_members(Box))
    # module names: `trialbook.sandbox.box`, `trialbook.sandbox.readonly`
    modules = {"box", "docker", "cgroup", "channel", "warm", "quota", "backend", "readonly", "py"}
    assert used, "the scan found no call at all"
    assert used - declared - modules == set()


def test_run_refuses_an_unknown_backend_in_one_line(cli, tmp_path: object) -> None:
    from paths import EXAMPLES

    res = cli("run", str(EXAMPLES), "--agent", "nop", "--run", "x", "--backend", "lxc", "--runs-dir", str(tmp_path))
    assert res.exit_code == 2
    assert "--backend must be one of: docker, podman (got 'lxc')" in res.stderr
    assert "Traceback" not in res.stderr
    res = cli(
        "run", str(EXAMPLES), "--agent", "nop", "--run", "x", "--backend", "fake-sleep", "--runs-dir", str(tmp_path)
    )
    assert res.exit_code == 2  # the fake is for benchmarks, never a run's

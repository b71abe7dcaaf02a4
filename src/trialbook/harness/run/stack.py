"""The Docker engine a run uses and the stack recorded on the run (what `compare` checks runs against)."""

from __future__ import annotations

import hashlib
from typing import Any, Protocol

import trialbook
from trialbook.agents.base import with_agent_stack
from trialbook.errors import UserError
from trialbook.harness.run.config import RunConfig
from trialbook.ledger.store import Ledger
from trialbook.sandbox import DaemonError, docker_help
from trialbook.sandbox.backend import Backend, UnknownBackend, backend_class
from trialbook.tasks import TaskSpec


class HasVersion(Protocol):
    """A Docker engine, or an executor that asks its nodes' engines."""

    def version(self) -> str: ...


def connect(backend: str = "docker", url: str | None = None) -> Backend:
    """The run's sandbox backend (sandbox/backend.py's registry), connected; one line when it does not answer."""
    try:
        cls = backend_class(backend)
    except UnknownBackend as exc:
        raise UserError(str(exc)) from None
    try:
        return cls(url=url) if url else cls()  # type: ignore[no-any-return]
    except DaemonError as exc:
        helper = getattr(cls, "unavailable_help", None)
        raise UserError(helper(str(exc)) if helper else docker_help()) from None


def sandbox_stack(engine: HasVersion, agent: str, specs: list[TaskSpec], images: dict[str, str]) -> dict[str, Any]:
    hashes = {s.task_id: s.verifier_hash[:16] for s in specs}
    combined = hashlib.sha256("".join(f"{k}:{v}\n" for k, v in sorted(hashes.items())).encode()).hexdigest()
    images = {task: image_id[:19] for task, image_id in images.items()}  # sha256: + 12 hex, as `docker images`
    distinct = set(images.values())
    return {
        "harness": "trialbook",
        "harness_version": trialbook.__version__,
        "engine": getattr(engine, "backend", "docker"),  # the sandbox backend's registry name
        "engine_version": engine.version(),
        "agent": agent,
        "image": next(iter(distinct)) if len(distinct) == 1 else None,
        "images": dict(sorted(images.items())),
        "verifier_hash": combined[:16],
        "verifier_hashes": dict(sorted(hashes.items())),
    }


def update_stack(
    ledger: Ledger, engine: HasVersion, run_id: int, run_name: str, config: RunConfig, images: dict[str, str]
) -> None:
    """Add the images the run's trials actually used to its stored stack."""
    old = ledger.get_run(run_name).stack
    merged = {**(old.get("images") or {}), **images}
    specs, _ = config.load_tasks()
    with ledger.transaction() as conn:
        stack = with_agent_stack(sandbox_stack(engine, config.agent, specs, merged), old.get("serving"))
        ledger.set_run_stack(conn, run_id, stack)

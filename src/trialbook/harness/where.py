"""Where a run's trials go: the local thread pool on one backend, several engines, or a Ray cluster, chosen by the
run's options (`--executor`, `--backend`, `--engine`, `--ray-address`)."""

from __future__ import annotations

import os

from trialbook.errors import UserError
from trialbook.harness.executors import EXECUTORS, Executor, LocalExecutor
from trialbook.harness.stack import connect
from trialbook.sandbox.backend import RUN_BACKENDS


def make_executor(
    kind: str = "local", address: str | None = None, backend: str = "docker", engines: list[str] | None = None,
    concurrency: int = 1,
) -> Executor:  # fmt: skip
    """`local` (on `backend`: sandbox/backend.py's registry; over several `engines` endpoints: harness/engines.py),
    or `ray` on the cluster at `address` (else $RAY_ADDRESS, else the cluster this machine is part of; its nodes
    run Docker)."""
    if backend not in RUN_BACKENDS:
        raise UserError(f"--backend must be one of: {', '.join(RUN_BACKENDS)} (got '{backend}')")
    if kind == "local":
        if address:
            raise UserError("--ray-address goes with --executor ray")
        if engines:
            from trialbook.harness.engines import EnginesExecutor

            return EnginesExecutor(engines, concurrency, backend)
        return LocalExecutor(connect(backend))
    if engines:
        raise UserError("--engine goes with --executor local (a Ray node runs trials on its own daemon)")
    if backend != "docker":
        raise UserError(f"--executor ray runs on its nodes' Docker: --backend {backend} goes with --executor local")
    if kind == "ray":
        from trialbook.extras import require

        require("ray", "--executor ray")
        from trialbook.harness.raycluster import RayExecutor

        return RayExecutor(address or os.environ.get("RAY_ADDRESS") or "auto")
    raise UserError(f"--executor must be one of: {', '.join(EXECUTORS)} (got '{kind}')")

"""Where a command's trials go: the local thread pool on one backend, several engines, or a Ray cluster, chosen by
its options (`--executor`, `--backend`, `--engine`, `--ray-address`, `--concurrency`): one `Where`, taken alike by
run, validate, grade, reverify, quickstart and clean (cli/harness.py WHERE), stored in a run's config for resume and
rerun."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from trialbook.errors import UserError
from trialbook.harness.placement.executors import EXECUTORS, Executor, LocalExecutor
from trialbook.harness.run.stack import connect
from trialbook.sandbox.backend import RUN_BACKENDS


@dataclass
class Where:
    """Where trials run: `executor` local (a thread pool here, on `backend`; over several `engines` endpoints:
    harness/placement/fleet.py) or ray (the cluster at `ray_address`, else $RAY_ADDRESS, else the one this machine is
    part
    of; its nodes run Docker); `concurrency` trials at once."""

    executor: str = "local"
    backend: str = "docker"
    engines: list[str] = field(default_factory=list)
    ray_address: str | None = None
    concurrency: int = 1

    def settings(self) -> dict[str, Any]:
        """What a run stores of it (RunConfig's backend, engines, concurrency): resume and rerun go there again."""
        return {"backend": self.backend, "engines": list(self.engines), "concurrency": self.concurrency}

    @classmethod
    def of_run(cls, config: dict[str, Any], executor: str = "local", ray_address: str | None = None) -> Where:
        """Where a stored run ran (its config; docker on one daemon for a run from before --backend and --engine),
        on `executor` as given now."""
        return cls(
            executor, str(config.get("backend") or "docker"), list(config.get("engines") or []), ray_address,
            int(config.get("concurrency") or 1),
        )  # fmt: skip


def make_executor(where: Where | None = None) -> Executor:
    """The executor `where` names (see Where)."""
    w = where or Where()
    if w.backend not in RUN_BACKENDS:
        raise UserError(f"--backend must be one of: {', '.join(RUN_BACKENDS)} (got '{w.backend}')")
    if w.executor == "local":
        if w.ray_address:
            raise UserError("--ray-address goes with --executor ray")
        if w.engines:
            from trialbook.harness.placement.fleet import EnginesExecutor

            return EnginesExecutor(list(w.engines), w.concurrency, w.backend)
        return LocalExecutor(connect(w.backend))
    if w.engines:
        raise UserError("--engine goes with --executor local (a Ray node runs trials on its own daemon)")
    if w.backend != "docker":
        raise UserError(f"--executor ray runs on its nodes' Docker: --backend {w.backend} goes with --executor local")
    if w.executor == "ray":
        from trialbook.extras import require

        require("ray", "--executor ray")
        from trialbook.harness.placement.raycluster import RayExecutor

        return RayExecutor(w.ray_address or os.environ.get("RAY_ADDRESS") or "auto")
    raise UserError(f"--executor must be one of: {', '.join(EXECUTORS)} (got '{w.executor}')")

"""Adapters from RL trainers to `trialbook.rl.rollout`: every rollout is a graded, recorded trial.

- TRL: `rl/trl.py` (`TrialbookSpec` for `GRPOTrainer(environment_factory=...)`, `train_grpo`), re-exported here.
- SkyRL: `SkyRLGenerator.generate(input_batch)` is SkyRL's `GeneratorInterface` (skyrl 0.4.0,
  skyrl/train/generators/base.py: `GeneratorInput` -> `GeneratorOutput`), duck-typed so that trialbook runs
  without SkyRL (it needs Python >= 3.12); `skyrl_generator(rollouts)` gives one that subclasses the installed
  package's `GeneratorInterface`.
  The rollouts must run through the model gateway (`Rollouts(gateway=...)`): each output row is the trial's
  exact token sequence as the engine saw it (trialbook/trajectory.py): `prompt_token_ids` the first turn's prompt,
  `response_ids` every later token (the policy's completions and the observations between them), `loss_masks`
  1 on the completions only, `rollout_logprobs` the engine's logprobs aligned to `response_ids` (0.0 off the
  mask). A group (one `instance_id`) is settled by the rewards policy's group rule; a masked row gets reward
  0.0 and an all-zero loss mask. A trajectory with a broken prefix is cut at its first break (the part the
  model really saw) and counted in `rollout_metrics`.
- AReaL: `ArealWorkflow.run(data, **extra_kwargs)` is an agent workflow returning the reward; the mini agent
  talks to the OpenAI-compatible proxy AReaL passes as `base_url` (AReaL records the tokens on its side).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from trialbook.errors import UserError
from trialbook.rl.rollout import RolloutResult, Rollouts
from trialbook.rl.trl import TrialbookSpec, train_grpo

__all__ = ["ArealWorkflow", "SkyRLGenerator", "TrialbookSpec", "skyrl_generator", "skyrl_row", "train_grpo"]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    """A field of SkyRL's dataclasses (BatchMetadata, TrajectoryID) or of a plain dict in their shape."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def skyrl_row(r: RolloutResult) -> dict[str, Any]:
    """One `GeneratorOutput` row from a recorded rollout's trajectory (see the module docstring)."""
    traj = r.trajectory
    if traj is None or not traj.turns:  # no model call at all (the sandbox never started): nothing to train on
        return {"prompt_token_ids": [], "response_ids": [], "reward": 0.0, "loss_mask": [], "logprobs": [],
                "stop_reason": r.outcome, "broken": False}  # fmt: skip
    seg = traj.segments()[0]
    n = len(traj.turns[0].prompt_ids)
    masked = r.reward is None
    return {
        "prompt_token_ids": seg.input_ids[:n],
        "response_ids": seg.input_ids[n:],
        "reward": 0.0 if masked else float(r.reward or 0.0),
        "loss_mask": [0] * (len(seg.input_ids) - n) if masked else seg.loss_mask[n:],
        "logprobs": [0.0 if v is None else float(v) for v in seg.logprobs[n:]],
        "stop_reason": r.outcome,
        "broken": bool(traj.broken),
    }


class SkyRLGenerator:
    """SkyRL `GeneratorInterface`: one trialbook rollout per prompt, in batch order.

    `env_extras[i]["task_id"]` names the task; `trajectory_ids[i]` (instance_id, repetition_id) the group and
    the attempt; `batch_metadata.global_step` the step. The weight version is the gateway's (the trainer sets
    it at each sync: `gateway.set_weight_version(v)`), so an async trainer's staleness is recorded as it was."""

    def __init__(self, rollouts: Rollouts) -> None:
        if rollouts.gateway is None:
            raise UserError("SkyRLGenerator needs Rollouts(gateway=...): token ids come from the model gateway")
        self.rollouts = rollouts

    async def generate(self, input_batch: dict[str, Any]) -> dict[str, Any]:
        extras = input_batch.get("env_extras") or []
        ids = input_batch.get("trajectory_ids") or [None] * len(extras)
        step = int(_get(input_batch.get("batch_metadata"), "global_step", 0) or 0)
        groups: dict[str, list[int]] = {}
        for i, (extra, tid) in enumerate(zip(extras, ids, strict=True)):
            groups.setdefault(str(_get(tid, "instance_id", extra["task_id"])), []).append(i)
        results: list[RolloutResult | None] = [None] * len(extras)

        async def one_group(gid: str, rows: list[int]) -> None:
            task = extras[rows[0]]["task_id"]
            attempts = [int(_get(ids[i], "repetition_id", n)) for n, i in enumerate(rows)]
            members = await asyncio.gather(*(self.rollouts._execute(task, a, f"{gid}@{step}", None) for a in attempts))
            settled = await asyncio.to_thread(
                self.rollouts.settle, list(members), step, None, 0, f"{gid}@{step}",
                lambda a: self.rollouts._execute(task, a, f"{gid}@{step}", None),
            )  # fmt: skip
            for i, r in zip(rows, settled, strict=True):
                results[i] = r

        await asyncio.gather(*(one_group(g, rows) for g, rows in groups.items()))
        out = [skyrl_row(r) for r in results if r is not None]
        return {
            "prompt_token_ids": [o["prompt_token_ids"] for o in out],
            "response_ids": [o["response_ids"] for o in out],
            "rewards": [o["reward"] for o in out],
            "loss_masks": [o["loss_mask"] for o in out],
            "stop_reasons": [o["stop_reason"] for o in out],
            "rollout_logprobs": [o["logprobs"] for o in out],
            "trajectory_ids": list(input_batch.get("trajectory_ids") or []) or None,
            "rollout_metrics": {
                "trialbook/resolved": sum(r.verifier_reward == 1.0 for r in results if r is not None),
                "trialbook/masked": sum(r.masked for r in results if r is not None),
                "trialbook/broken_prefix": sum(o["broken"] for o in out),
            },
        }


def skyrl_generator(rollouts: Rollouts) -> SkyRLGenerator:
    """A `SkyRLGenerator` that is also an instance of the installed skyrl's `GeneratorInterface` (for SkyRL's
    trainer: `BasePPOExp.get_generator` may return it). Needs skyrl (Python >= 3.12)."""
    try:
        from skyrl.train.generators.base import GeneratorInterface
    except ImportError as exc:
        raise UserError(f"skyrl is not installed here ({exc}); SkyRL needs Python >= 3.12") from exc
    cls = type("TrialbookSkyRLGenerator", (SkyRLGenerator, GeneratorInterface), {})
    generator: SkyRLGenerator = cls(rollouts)
    return generator


class ArealWorkflow:
    """AReaL agent workflow: `await run(data, **extra_kwargs)` returns the trajectory's reward.

    AReaL runs it with its OpenAI-compatible proxy as `base_url` (or `OPENAI_BASE_URL`); the
    proxy records tokens and logprobs on its side, trialbook records the graded trial. `data`
    needs `task_id`; `step`/`wv` default to 0. A masked trajectory returns None (rejected)."""

    def __init__(self, rollouts: Rollouts) -> None:
        self.rollouts = rollouts  # give it model=NAME if the proxy does not answer /v1/models

    async def run(self, data: dict[str, Any], **extra_kwargs: Any) -> float | None:
        base_url = extra_kwargs.get("base_url") or os.environ.get("OPENAI_BASE_URL")
        step = int(data.get("step", 0))
        result = await self.rollouts.rollout(
            data["task_id"],
            step=step,
            wv=int(data.get("wv", step)),
            group_id=data.get("group_id"),
            attempt=int(data.get("attempt", 0)),
            endpoint=base_url,
        )
        return result.reward

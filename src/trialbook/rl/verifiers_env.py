"""verifiers (PrimeIntellect's environments library, what prime-rl trains on): an environment whose rollouts are
trialbook trials, loadable by verifiers' own entry points.

    vf-eval trialbook.rl.verifiers_env -a '{"tasks": "examples/tasks", "ledger": "ledger.db", "gateway": GW}' \\
        -m MODEL -b GW -k KEY_VAR -n 2 -r 2 -S '{"logprobs": true}'

`load_environment(...)` returns a `vf.MultiTurnEnv` (verifiers' classic API: what `vf-eval`, `vf.load_environment`
and prime-rl's orchestrator drive). One row per task; each rollout starts a trial of it (rl/episode.py: the
harness runs it, sandbox, isolation and all); each model reply's ```bash blocks run in that trial's sandbox and
their output is the next user message; a reply without one is told so (a format error, as mini-swe-agent
does: the turn is spent); the episode ends on the submit command, at `max_turns`, or at once when the trial
failed before the agent started. The rubric's reward is a group function: it ends every episode of the
group, lets the verifier grade each, settles the group by the rewards policy (a masked member masks the
group: reward 0.0 and the `trialbook_masked` metric 1) and records each rollout as a `kind=train` trial
with `step`.

Token ids: give `gateway=` the URL of a model gateway (rl/gateway.py) and point verifiers' client at it
(`-b`). verifiers sends each rollout's `trajectory_id` as `X-Session-ID`, which the gateway takes as the trial
key; the environment takes those calls back (`POST /admin/take/<id>`) and the trial keeps the exact turns
(`tokens.json`). With `logprobs` in the sampling args verifiers also reads the gateway's token ids into its
own trajectory (`state["trajectory"][k]["tokens"]`, what prime-rl trains on): the same ids.

Needs the `verifiers` extra (verifiers 0.3.1: 0.4.0 pins openai < 3).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from pathlib import Path
from typing import Any

from trialbook.extras import require

require("verifiers", "the verifiers environment")

import verifiers as vf  # noqa: E402
from datasets import Dataset  # noqa: E402

from trialbook.rl.episode import Episode  # noqa: E402
from trialbook.rl.gateway import take_calls  # noqa: E402
from trialbook.rl.rollout import Pending, RolloutOptions, Rollouts, actions  # noqa: E402
from trialbook.trajectory import Trajectory  # noqa: E402

ROLLOUT_FIELDS = frozenset(RolloutOptions.__dataclass_fields__)  # load_environment's keywords for the Rollouts

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
SYSTEM = f"""You are a software engineer fixing an issue in a code repository. Each reply: one short thought, then
exactly one shell command in a ```bash block; it runs in the repository and you get its output. When the fix is
done, reply with the command `{SUBMIT}`."""

FORMAT_ERROR = f"Format error: no ```bash block in the reply. Reply with one command in a ```bash block, or `{SUBMIT}`."
ENDED = "The episode is over."


def _content(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else getattr(message, "content", None)
    return content if isinstance(content, str) else ""


class TrialbookEnv(vf.MultiTurnEnv):
    """A verifiers multi-turn environment over trialbook's tasks (see the module docstring)."""

    def __init__(self, rollouts: Rollouts, *, gateway: str | None = None, step: int = 0, max_turns: int = 4,
                 tasks: list[str] | None = None, **kwargs: Any) -> None:  # fmt: skip
        names = tasks or sorted(rollouts.tasks)
        rows = [{"prompt": [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": rollouts.tasks[t].instruction}],
                 "info": {"task_id": t}} for t in names]  # fmt: skip
        rubric = vf.Rubric()
        rubric.add_reward_func(self.verdict)
        rubric.add_metric(self.trialbook_masked)
        dataset = Dataset.from_list(rows)
        super().__init__(dataset=dataset, eval_dataset=dataset, rubric=rubric, max_turns=max_turns, **kwargs)
        self.trialbook = rollouts
        self.gateway_url = gateway
        self.step = step
        self._episodes: dict[str, Episode] = {}  # trajectory_id -> its trial's episode
        self._attempts: dict[str, itertools.count[int]] = {}
        self._lock = threading.Lock()

    def _next_attempt(self, task_id: str) -> int:
        with self._lock:
            return next(self._attempts.setdefault(task_id, itertools.count()))

    async def setup_state(self, state: vf.State) -> vf.State:
        task_id = state["info"]["task_id"]
        attempt = self._next_attempt(task_id)
        self._episodes[state["trajectory_id"]] = await asyncio.to_thread(
            Episode.start, self.trialbook, task_id, attempt, f"{task_id}@{self.step}"
        )
        state["trialbook"] = {"task_id": task_id, "attempt": attempt}
        return state

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs: Any) -> vf.Messages:
        episode = self._episodes[state["trajectory_id"]]
        commands = actions(_content(messages[-1]))
        if not episode.running or any(c.strip() == SUBMIT for c in commands):
            # submitted, or the trial failed before the agent started (its sandbox never came up)
            reply = [{"role": "user", "content": ENDED}]
            state["final_env_response"] = reply
            return reply
        if not commands:  # as mini-swe-agent does: the turn is spent, the model is told the format
            return [{"role": "user", "content": FORMAT_ERROR}]
        outputs = [await asyncio.to_thread(episode.bash, c) for c in commands]
        return [{"role": "user", "content": "\n\n".join(outputs)}]

    async def verdict(self, states: list[vf.State]) -> list[float]:
        """End the group's episodes, grade and record them; each one's training reward (0.0 when masked)."""
        return await asyncio.to_thread(self._grade_group, states)

    def _grade_group(self, states: list[vf.State]) -> list[float]:
        episodes = [self._episodes.pop(s["trajectory_id"]) for s in states]
        for ep in episodes:  # every verifier runs at once
            ep.stop()
        pendings: list[Pending] = [ep.finish() for ep in episodes]
        for state, pending in zip(states, pendings, strict=True):
            if self.gateway_url is not None:
                calls = take_calls(self.gateway_url, state["trajectory_id"])
                pending.trajectory = Trajectory.from_calls(calls) if calls else None
        gid = f"{episodes[0].task_id}@{self.step}"
        for p in pendings:
            p.group_id = gid
        # no rerun: verifiers generated these turns itself; a "retry" policy masks the group (recorded)
        results = self.trialbook.settle(pendings, self.step, None, 0, gid, rerun=None)
        for state, r in zip(states, results, strict=True):
            state["trialbook"] = {**state.get("trialbook", {}), "trial_id": r.trial_id, "outcome": r.outcome,
                                  "masked": r.masked, "verifier_reward": r.verifier_reward}  # fmt: skip
        return [0.0 if r.reward is None else float(r.reward) for r in results]

    async def trialbook_masked(self, state: vf.State) -> float:
        return 1.0 if (state.get("trialbook") or {}).get("masked") else 0.0


def load_environment(
    tasks: str,
    ledger: str,
    run: str = "verifiers",
    gateway: str | None = None,
    step: int = 0,
    max_turns: int = 4,
    task_ids: list[str] | None = None,
    **kwargs: Any,
) -> TrialbookEnv:
    """verifiers' entry point: `vf.load_environment("trialbook.rl.verifiers_env", tasks=..., ledger=...)`.

    `tasks`: a folder of task folders; `ledger`: the ledger (a SQLite path or a PostgreSQL URL); `run`: the
    train run the trials go to (appended to if it exists); `gateway`: the model gateway's URL, for token ids.
    A group with a masked member is masked whole (verifiers generated the turns: none can be re-run here).
    `kwargs`: a RolloutOptions field (timeout_multiplier, runs_dir, where, ...) goes to the Rollouts, the rest to the
    environment."""
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in ROLLOUT_FIELDS and kwargs[k] is not None}
    rollouts = Rollouts(ledger, run, Path(tasks), **{
        "serving": {"engine": "verifiers", "gateway": gateway}, "retries": 0, **options,
    })  # fmt: skip
    return TrialbookEnv(rollouts, gateway=gateway, step=step, max_turns=max_turns, tasks=task_ids, **kwargs)

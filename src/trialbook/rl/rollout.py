"""The rollout API a trainer calls: one trial per call, graded in Docker, written to the ledger.

    rollouts = Rollouts("ledger.db", "grpo-1", "examples/tasks", endpoints=["http://127.0.0.1:8000/v1"])
    result = await rollouts.rollout("plain-bugfix", step=3, wv=3, group_id="s3-plain-bugfix", attempt=1)
    result.reward  # the training reward (rewards policy), None when masked (infra_error, incomplete)

Every call runs the `mini` agent (mini-swe-agent's loop; `agent=` names another of the registry that takes
`endpoints`: `mini-swe-agent`, the leaderboard's config, or an agent CLI) against the policy endpoint in a fresh
sandbox, grades it with the task's verifier, and records a `kind=train` trial with `step`, `wv`
and `epoch`, so `trialbook train report RUN` works while training is still going. The run's
config keeps the rewards policy in force and its stack the serving engine the endpoint reports.

With `gateway=` (rl/gateway.py) every model call goes through the model gateway, each trial under its own key:
the trial then keeps its exact token ids, logprobs and weight versions per turn (the `tokens.json` artifact,
trialbook/trajectory.py), its `wv` is the oldest weight version that generated any of it, and `extra.rollout` holds
turns, prefix breaks and staleness. `group()` settles a group with a masked member by the rewards policy's
`group` rule (mask it whole, or retry the member first).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialbook.agents.base import Agent, AgentResult, agent_stack
from trialbook.agents.base import FormatError as FormatStop
from trialbook.agents.mini import SandboxEnvironment
from trialbook.agents.registry import get_agent
from trialbook.errors import UserError
from trialbook.extra_schema import GroupMask, read_extra, with_extra
from trialbook.harness.placement.choice import Where, make_executor
from trialbook.harness.placement.executors import Executor
from trialbook.harness.run.bootstrap import RunStart, prepare, trial_settings
from trialbook.harness.run.config import RunConfig
from trialbook.harness.run.paths import DEFAULT_RUNS_DIR, RunPaths
from trialbook.harness.trial.execution import Stopper, TrialResult
from trialbook.harness.trial.writer import record_trial, write_or_warn
from trialbook.ledger.store import Ledger
from trialbook.outcomes import ErrorKind
from trialbook.records import Run
from trialbook.rewards import DEFAULT_POLICY, RewardPolicy
from trialbook.rl.gateway import Gateway
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec
from trialbook.trajectory import ARTIFACT, Trajectory, tagged
from trialbook.verify import linear

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
from minisweagent.exceptions import Submitted  # noqa: E402

# the model's reply, read in time linear in it (RE2: verify/linear.py)
ACTION = linear.compile(r"```(?:mswea_bash_command|bash|sh)\s*\n(.*?)\n?```", re.DOTALL)


def actions(reply: str) -> list[str]:
    """The shell commands of a model reply: its non-empty ```bash blocks, in order."""
    return [a.strip() for a in ACTION.findall(reply) if a.strip()]


class CompletionAgent:
    """One model completion as the whole episode: its bash block(s) run in order, then the verifier.

    A completion with no bash block is a format_error (still graded: the untouched repo fails).
    It counts as the agent's own submission, so `finalize_reward_scale` applies to it."""

    name = "completion"

    def __init__(self, completion: str, command_timeout: float = 60.0) -> None:
        self.completion = completion
        self.command_timeout = command_timeout

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        start = time.monotonic()
        commands = actions(self.completion)
        log = [f"--- assistant\n{self.completion}"]
        env = SandboxEnvironment(sandbox, start + timeout, self.command_timeout)
        exit_code = None
        for command in commands:
            try:
                out = env.execute({"command": command})
            except Submitted:
                break
            exit_code = out["returncode"]
            log.append(f"--- user\n<returncode>{exit_code}</returncode>\n{out['output'][-4000:]}")
        trajectory = {"messages": [{"role": "assistant", "content": self.completion}], "actions": commands}
        result = AgentResult(
            exit_code=exit_code,
            log="\n".join(log) + "\n",
            duration_s=round(time.monotonic() - start, 3),
            turns=1,
            files={"trajectory.json": json.dumps(trajectory, indent=1)},
            info={"exit_status": "Submitted" if commands else ErrorKind.FORMAT, "submitted": bool(commands)},
        )
        if not commands:
            raise FormatStop("the completion has no ```bash block", result)
        return result


@dataclass
class RolloutResult:
    """What a trainer needs back from one rollout."""

    trial_id: int
    task_id: str
    group_id: str | None
    attempt: int
    step: int
    wv: int | None
    epoch: int
    outcome: str
    verifier_reward: float | None
    reward: float | None  # by the rewards policy; None: masked from training
    masked: bool
    submitted: bool
    turns: int | None
    tokens: int | None
    messages: list[dict[str, Any]] = field(default_factory=list)
    # per model call, as the endpoint returned them (None where it did not)
    token_ids: list[list[int] | None] = field(default_factory=list)
    logprobs: list[list[dict[str, Any]] | None] = field(default_factory=list)
    trajectory: Trajectory | None = None  # the gateway's record of every call (None without a gateway)
    group_masked: bool = False


@dataclass
class Pending:
    """A finished, not yet recorded trial (a group is recorded once its policy is settled)."""

    result: TrialResult
    group_id: str | None
    trajectory: Trajectory | None


@dataclass
class RolloutOptions:
    """How a rollout run runs its trials: the keyword arguments of `Rollouts(db, run, tasks_dir, **options)`."""

    endpoints: Sequence[str] = ()
    model: str | None = None
    serving: dict[str, Any] | None = None
    rewards: RewardPolicy = field(default_factory=lambda: DEFAULT_POLICY)
    agent_options: dict[str, Any] | None = None
    retries: int = 2
    runs_dir: str | Path = DEFAULT_RUNS_DIR
    # where the rollouts run, as `run --executor/--backend/--engine` (harness/placement/choice.py); "ray": each rollout
    # is a
    # Ray task on a cluster node (harness/placement/raycluster.py) and this process records it. Or an executor already
    # open.
    where: Where | Executor = field(default_factory=Where)
    gateway: Gateway | None = None
    timeout_multiplier: float = 1.0
    agent: str = "mini"


class Rollouts:
    """One training run in the ledger; each `rollout()` adds one `kind=train` trial to it.

    Opening an existing train run of the same name appends to it (a trainer that restarts). `options`: the fields
    of RolloutOptions (an unknown name is a TypeError)."""

    def __init__(self, db: str | Path | None, run: str, tasks_dir: str | Path, **options: Any) -> None:
        o = RolloutOptions(**options)
        self.ledger = Ledger(str(db) if db is not None else None)
        self.agent = o.agent
        self.run = run
        self.rewards = o.rewards
        self.gateway = gateway = o.gateway
        self.runs_dir = RunPaths.of(o.runs_dir, run).folder
        endpoints = [gateway.url] if gateway is not None and not o.endpoints else list(o.endpoints)
        self.options = {**(o.agent_options or {}), "endpoints": endpoints}
        if o.model:
            self.options["model"] = o.model
        self.config = self._config(tasks_dir, o)
        engine = make_executor(o.where) if isinstance(o.where, Where) else o.where
        start = prepare(self.config, engine, agent=False)  # the agents are per endpoint (`_agent`)
        if start.errors:
            raise UserError(f"unusable task folder(s): {', '.join(e.task_id for e in start.errors)}")
        self.executor = start.executor
        self.tasks: dict[str, TaskSpec] = {s.task_id: s for s in start.specs}
        self._agents: dict[tuple[str, ...], Agent] = {}
        serving = o.serving
        if serving is None and endpoints:
            serving = agent_stack(self._agent(None))
        if gateway is not None and "model" not in self.options:
            self.options["model"] = self._agent(None).model_name()  # type: ignore[attr-defined] # asked once
            start.config = self.config = self._config(tasks_dir, o)
        # the run lock is held while the run is opened, not after: a trainer may write one train run from several
        # processes (environment workers), each opening it (append=True) and recording its own trials
        with start.opened(self.ledger, self._record_of(start, serving), append=True) as run_id:
            self.run_id = run_id
        self.stopper = Stopper()

    def _config(self, tasks_dir: str | Path, o: RolloutOptions) -> RunConfig:
        where = o.where.settings() if isinstance(o.where, Where) else {}
        return RunConfig(
            tasks_dir=str(Path(tasks_dir).resolve()),
            agent=self.agent,
            retries=o.retries,
            runs_dir=str(Path(o.runs_dir).resolve()),
            agent_options=self.options,
            timeout_multiplier=o.timeout_multiplier,
            hack_policy=self.rewards.hack_policy,
            **where,
        )

    def _record_of(self, start: RunStart, serving: dict[str, Any] | None) -> Run:
        """The train run's record: its config keeps the rewards policy (and the gateway) in force."""
        config = {**self.config.model_dump(), "rewards": self.rewards.record()}
        if self.gateway is not None:
            config["gateway"] = {"engine": self.gateway.engine.name, "engine_url": self.gateway.engine_url}
        return Run(name=self.run, kind="train", config=config, stack=start.stack(serving=serving))

    def _agent(self, endpoint: str | Sequence[str] | None) -> Agent:
        urls = tuple([endpoint] if isinstance(endpoint, str) else endpoint or self.options["endpoints"])
        if not urls:
            raise UserError("this rollout run has no policy endpoint: pass endpoints=[...] or endpoint=")
        if urls not in self._agents:
            agent = get_agent(self.agent, {**self.options, "endpoints": list(urls)})
            if not callable(getattr(agent, "model_name", None)):
                raise UserError(f"agent {self.agent!r} takes no model endpoint: rollouts need one that does")
            self._agents[urls] = agent
        return self._agents[urls]

    async def rollout(
        self,
        task_id: str,
        *,
        step: int,
        wv: int | None = None,
        epoch: int = 0,
        group_id: str | None = None,
        attempt: int = 0,
        endpoint: str | Sequence[str] | None = None,
    ) -> RolloutResult:
        """Run, grade and record one trial; `endpoint` overrides the policy endpoint for this call.

        `wv`: the weight version that generated it, when the trainer knows it; through a gateway, the
        version the gateway recorded for the trial's first call wins."""
        pending = await self._execute(task_id, attempt, group_id, endpoint)
        return await asyncio.to_thread(self._record, pending, step, wv, epoch)

    async def score(
        self,
        task_id: str,
        completion: str,
        *,
        step: int,
        wv: int,
        epoch: int = 0,
        group_id: str | None = None,
        attempt: int = 0,
    ) -> RolloutResult:
        """Execute one model completion's bash block(s) in a sandbox and grade it (single-turn RL)."""
        pending = await self._run_agent(CompletionAgent(completion), task_id, attempt, group_id, None)
        return await asyncio.to_thread(self._record, pending, step, wv, epoch)

    async def _execute(
        self, task_id: str, attempt: int, group_id: str | None, endpoint: str | Sequence[str] | None
    ) -> Pending:
        key = None
        if self.gateway is not None and endpoint is None:
            key = self.gateway.new_key()
            agent: Agent = get_agent(self.agent, {**self.options, "endpoints": [self.gateway.url_for(key)]})
        else:
            agent = self._agent(endpoint)
        return await self._run_agent(agent, task_id, attempt, group_id, key)

    async def _run_agent(
        self, agent: Agent, task_id: str, attempt: int, group_id: str | None, key: str | None
    ) -> Pending:
        if task_id not in self.tasks:
            raise UserError(f"unknown task '{task_id}' (known: {', '.join(sorted(self.tasks))})")
        settings = trial_settings(self.ledger, self.run_id, self.run, self.config, agent)
        task = self.tasks[task_id]
        result = await asyncio.to_thread(self.executor.run_one, task, attempt, settings, self.stopper)
        traj = None
        if key is not None and self.gateway is not None:
            traj = Trajectory.from_calls(self.gateway.take(key))
        return Pending(result, group_id, traj)

    def _record(
        self, pending: Pending, step: int, wv: int | None, epoch: int, group_masked: GroupMask | None = None
    ) -> RolloutResult:
        result, group_id, traj = pending.result, pending.group_id, pending.trajectory
        t = result.trial
        notes = read_extra(t)
        submitted = bool(notes.agent_info.get("submitted"))
        tags = notes.tags
        reward = None if group_masked else self.rewards.reward(t.outcome, t.reward, submitted, tags)
        extra = with_extra(t.extra, group_id=group_id, train_reward=reward, masked=reward is None)
        if zeroed := ([] if group_masked else self.rewards.zeroed(t.reward, tags)):
            extra = with_extra(extra, hack_zeroed=zeroed)
        if group_masked:
            extra = with_extra(extra, group_masked=group_masked)
        if traj is not None and traj.turns:
            wv = traj.wv_first if traj.wv_first is not None else wv
            extra = tagged(extra, traj, step)
            result.extra_files[ARTIFACT] = traj.dumps()
        result.trial = t.model_copy(update={"step": step, "wv": wv, "epoch": epoch, "extra": extra})
        trial_id = record_trial(self.ledger, self.run_id, result)
        write_or_warn(self.ledger, trial_id, self.runs_dir, self.run, result)
        trajectory = json.loads(result.extra_files.get("trajectory.json") or "{}")
        calls = (trajectory.get("info") or {}).get("calls") or []
        return RolloutResult(
            trial_id=trial_id,
            task_id=t.task_id,
            group_id=group_id,
            attempt=t.attempt,
            step=step,
            wv=wv,
            epoch=epoch,
            outcome=t.outcome.value,
            verifier_reward=t.reward,
            reward=reward,
            masked=reward is None,
            submitted=submitted,
            turns=t.turns,
            tokens=t.tokens,
            messages=[{"role": m.get("role"), "content": m.get("content")} for m in trajectory.get("messages", [])],
            token_ids=[c.get("token_ids") for c in calls],
            logprobs=[c.get("logprobs") for c in calls],
            trajectory=traj,
            group_masked=bool(group_masked),
        )

    def masked(self, pending: Pending) -> bool:
        t = pending.result.trial
        return self.rewards.masked(t.outcome)

    async def group(
        self, task_id: str, size: int, *, step: int, wv: int | None = None, epoch: int = 0,
        group_id: str | None = None,
    ) -> list[RolloutResult]:  # fmt: skip
        """`size` rollouts of one task at once (a GRPO group), attempts 0..size-1, settled by the rewards
        policy's group rule (`rewards.GROUP_POLICIES`) before any of them is recorded."""
        gid = group_id or f"{task_id}@{step}"
        members = list(await asyncio.gather(*(self._execute(task_id, a, gid, None) for a in range(size))))
        return await asyncio.to_thread(self.settle, members, step, wv, epoch, gid, lambda a: self._execute(
            task_id, a, gid, None))  # fmt: skip

    def settle(
        self, members: list[Pending], step: int, wv: int | None, epoch: int, gid: str,
        rerun: Callable[[int], Coroutine[Any, Any, Pending]] | None = None,
    ) -> list[RolloutResult]:  # fmt: skip
        """Apply the group rule to finished members, record them all, return the group's results (the retried
        members' failed tries are recorded too, masked, and not returned)."""
        replaced: list[Pending] = []
        if self.rewards.group == "retry" and rerun is not None:
            next_attempt = max(p.result.trial.attempt for p in members) + 1
            for i in range(len(members)):
                tries = self.rewards.group_retries
                while tries and self.masked(members[i]):
                    replaced.append(members[i])
                    members[i] = asyncio.run(rerun(next_attempt))
                    next_attempt, tries = next_attempt + 1, tries - 1
        bad = [p.result.trial for p in members if self.masked(p)]
        mark = None
        if bad:
            because = [f"attempt {t.attempt}: {t.outcome.value}" for t in bad]
            policy = self.rewards.group if rerun is not None or self.rewards.group == "mask" else "mask (no rerun here)"
            mark = GroupMask(group=gid, policy=policy, because=because)
        for p in replaced:
            self._record(p, step, wv, epoch, GroupMask(group=gid, policy="retry", because=["retried"]))
        return [self._record(p, step, wv, epoch, mark) for p in members]

    def close(self) -> None:
        """Remove any container this run left (there should be none)."""
        self.executor.clean(self.run, images=False, ledger=self.ledger.id)

"""The rollout API for real: the policy served by llama-cpp-python, trials in Docker, `kind=train` rows.

Each rollout is graded by the task's verifier and rewarded through the rewards policy; the run is
readable by `trialbook train report` while it is being written.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from ledgerdicts import run_dict, trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer
from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.rl.rewards import RewardPolicy
from trialbook.rl.rollout import Rollouts

pytestmark = [pytest.mark.llm, pytest.mark.docker]  # the model server and Docker sandboxes, in every test


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


def test_two_steps_of_groups_are_train_trials_with_step_and_wv(cli, db: str, llama: LlamaServer, tmp_path: Path):
    policy = RewardPolicy(finalize_reward_scale=0.9)
    options = {"max_turns": 2, "max_output_tokens": 48, "logprobs": True}
    rollouts = Rollouts(
        db, "grpo-live", EXAMPLES, endpoints=[llama.url], rewards=policy, agent_options=options, runs_dir=tmp_path / "r"
    )

    async def train() -> list:
        out = []
        for step in range(2):  # wv lags step by one, as in asynchronous RL
            out += await rollouts.group("plain-bugfix", 2, step=step, wv=max(step - 1, 0), epoch=0)
        return out

    results = asyncio.run(train())
    rollouts.close()
    assert [(r.step, r.wv, r.attempt) for r in results] == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1)]
    ledger = Ledger(db)
    run = run_dict(ledger, "grpo-live")
    assert run["kind"] == "train"
    assert run["config"]["rewards"]["finalize_reward_scale"] == 0.9
    assert run["config"]["rewards"]["rules"]["infra_error"]["masked"] is True
    assert run["stack"]["engine"] and run["stack"]["model"]
    rows = {t["id"]: t for t in trial_dicts(ledger, run["name"])}
    assert len(rows) == 4
    for r in results:
        row = rows[r.trial_id]
        assert (row["step"], row["wv"], row["epoch"]) == (r.step, r.wv, 0)
        assert row["outcome"] == r.outcome and row["reward"] == r.verifier_reward
        assert r.reward == policy.reward(r.outcome, r.verifier_reward, r.submitted)
        extra = json.loads(row["extra"]) if isinstance(row["extra"], str) else row["extra"]
        assert extra["group_id"] == f"plain-bugfix@{r.step}" and extra["train_reward"] == r.reward
        assert r.messages[0]["role"] == "system" and len(r.messages) >= 3
        # one logprob list per completed model call; a call cut off by the wall clock (a loaded CI
        # machine) returns nothing, and then the trial is a graded agent_timeout
        assert len(r.logprobs) <= r.turns <= 2
        assert (len(r.logprobs) >= 1 and r.tokens > 0) or r.outcome == "agent_timeout", (r.outcome, r.turns)
    # llama-cpp-python returns per-token logprobs when asked: the trainer gets them back
    assert any(lp for r in results for lp in r.logprobs)

    report = cli("train", "report", "grpo-live", "--bucket", "1", "--json")
    assert report.exit_code == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["kind"] == "train" and data["trajectories"] == 4 and data["judged"] == 4
    assert docker.from_env().containers.list(all=True, sparse=True, filters={"label": "trialbook.run=grpo-live"}) == []


def test_rollouts_refuse_an_unknown_task_and_a_non_train_run(db: str, llama: LlamaServer, tmp_path: Path) -> None:
    rollouts = Rollouts(db, "grpo-x", EXAMPLES, endpoints=[llama.url], runs_dir=tmp_path)
    with pytest.raises(UserError, match="unknown task"):
        asyncio.run(rollouts.rollout("no-such-task", step=0, wv=0))
    again = Rollouts(db, "grpo-x", EXAMPLES, endpoints=[llama.url], runs_dir=tmp_path)  # a restarted trainer
    assert again.run_id == rollouts.run_id

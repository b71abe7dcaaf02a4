"""Trainer adapters for real: completions graded in Docker, SkyRL's generator and AReaL's workflow
shapes over the real llama-cpp-python server (TRL's GRPOTrainer: tests/rl/test_trl_grpo_learns.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer
from trialbook.ledger.store import Ledger
from trialbook.rl.rollout import Rollouts
from trialbook.rl.trainers import ArealWorkflow, SkyRLGenerator, trl_reward

pytestmark = [pytest.mark.llm, pytest.mark.docker]  # the model server and Docker sandboxes, in every test


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


def _rows(db: str, run: str) -> list[dict]:
    ledger = Ledger(db)
    return trial_dicts(ledger, run)


def test_a_completion_with_the_fix_is_resolved_and_one_without_a_block_is_a_format_error(db: str, tmp_path: Path):
    fix = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()
    rollouts = Rollouts(db, "completions", EXAMPLES, runs_dir=tmp_path)
    reward = trl_reward(rollouts)
    texts = [f"THOUGHT: rewrite median.\n```bash\n{fix}\n```", "I think the median is wrong."]
    assert reward(["p", "p"], texts, task_id=["plain-bugfix", "plain-bugfix"]) == [1.0, 0.0]
    rows = sorted(_rows(db, "completions"), key=lambda r: r["attempt"])
    assert [(r["outcome"], r["reward"], r["step"], r["wv"]) for r in rows] == [
        ("resolved", 1.0, 0, 0),
        ("format_error", 0.0, 0, 0),
    ]


def test_skyrl_generator_returns_one_graded_trajectory_per_prompt(db: str, llama: LlamaServer, tmp_path: Path):
    options = {"max_turns": 1, "max_output_tokens": 48}
    rollouts = Rollouts(db, "skyrl", EXAMPLES, endpoints=[llama.url], agent_options=options, runs_dir=tmp_path)
    batch = {
        "prompts": [[{"role": "user", "content": "fix it"}]] * 2,
        "env_classes": ["trialbook", "trialbook"],
        "env_extras": [{"task_id": "plain-bugfix"}, {"task_id": "plain-bugfix"}],
        "sampling_params": None,
        "batch_metadata": {"global_step": 3},
    }
    out = asyncio.run(SkyRLGenerator(rollouts).generate(batch))
    assert set(out) >= {"prompt_token_ids", "response_ids", "rewards", "loss_masks", "stop_reasons"}
    assert len(out["rewards"]) == 2 and all(isinstance(r, float) for r in out["rewards"])
    assert [len(m) for m in out["loss_masks"]] == [len(r) for r in out["response_ids"]]
    rows = _rows(db, "skyrl")
    assert sorted((r["step"], r["wv"], r["attempt"]) for r in rows) == [(3, 3, 0), (3, 3, 1)]
    assert sorted(out["stop_reasons"]) == sorted(r["outcome"] for r in rows)


def test_areal_workflow_returns_the_reward_through_the_proxy_url(db: str, llama: LlamaServer, tmp_path: Path):
    rollouts = Rollouts(
        db, "areal", EXAMPLES, agent_options={"max_turns": 1, "max_output_tokens": 48}, runs_dir=tmp_path
    )
    reward = asyncio.run(ArealWorkflow(rollouts).run({"task_id": "plain-bugfix", "step": 5}, base_url=llama.url))
    (row,) = _rows(db, "areal")
    extra = json.loads(row["extra"]) if isinstance(row["extra"], str) else row["extra"]
    assert reward == extra["train_reward"] and (row["step"], row["wv"]) == (5, 5)
    assert extra["agent_info"]["endpoints"] == [llama.url]

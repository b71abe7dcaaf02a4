"""Single completions graded in Docker (`Rollouts.score`) and AReaL's workflow over the real llama-cpp-python
server (TRL's GRPOTrainer: tests/rl/test_trl_environment.py; SkyRL's generator: tests/rl/test_skyrl_generator.py)."""

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
from trialbook.rl.trainers import ArealWorkflow

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
    texts = [f"THOUGHT: rewrite median.\n```bash\n{fix}\n```", "I think the median is wrong."]

    async def both() -> list:
        return [await rollouts.score("plain-bugfix", t, step=0, wv=0, attempt=a) for a, t in enumerate(texts)]

    assert [r.reward for r in asyncio.run(both())] == [1.0, 0.0]
    rows = sorted(_rows(db, "completions"), key=lambda r: r["attempt"])
    assert [(r["outcome"], r["reward"], r["step"], r["wv"]) for r in rows] == [
        ("resolved", 1.0, 0, 0),
        ("format_error", 0.0, 0, 0),
    ]


def test_areal_workflow_returns_the_reward_through_the_proxy_url(db: str, llama: LlamaServer, tmp_path: Path):
    rollouts = Rollouts(
        db, "areal", EXAMPLES, agent_options={"max_turns": 1, "max_output_tokens": 48}, runs_dir=tmp_path
    )
    reward = asyncio.run(ArealWorkflow(rollouts).run({"task_id": "plain-bugfix", "step": 5}, base_url=llama.url))
    (row,) = _rows(db, "areal")
    extra = json.loads(row["extra"]) if isinstance(row["extra"], str) else row["extra"]
    assert reward == extra["train_reward"] and (row["step"], row["wv"]) == (5, 5)
    assert extra["agent_info"]["endpoints"] == [llama.url]

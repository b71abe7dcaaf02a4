"""The group rule of the rewards policy (rewards.py GROUP_POLICIES) on real trials: a group with a masked
member is masked whole, or the member is re-run first; either way the choice and the masked group are recorded.

The members are real trials run by the harness in Docker: the oracle (resolved) and a task whose image cannot
be built (infra_error, masked by the rewards policy)."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from ledgerdicts import run_dict, trial_dicts
from paths import EXAMPLES
from trialbook.agents.registry import get_agent
from trialbook.ledger.store import Ledger
from trialbook.rl.rewards import RewardPolicy
from trialbook.rl.rollout import Pending, Rollouts

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    for name in ("plain-bugfix", "w41-bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", root / name)
    with (root / "w41-bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this image cannot be built' && exit 3\n")
    return root


def _oracle(rollouts: Rollouts, task: str, attempt: int) -> Pending:
    return asyncio.run(rollouts._run_agent(get_agent("oracle", {}), task, attempt, "g@1", None))


def test_a_masked_member_masks_its_whole_group(engine, db: str, tasks: Path, tmp_path: Path) -> None:
    rollouts = Rollouts(db, "w41-mask", tasks, retries=0, runs_dir=tmp_path)
    members = [_oracle(rollouts, "plain-bugfix", 0), _oracle(rollouts, "w41-bad-image", 0)]
    assert [m.result.trial.outcome.value for m in members] == ["resolved", "infra_error"]
    results = rollouts.settle(members, step=1, wv=1, epoch=0, gid="g@1")
    assert [r.reward for r in results] == [None, None] and all(r.group_masked for r in results)
    rows = trial_dicts(Ledger(db), "w41-mask")
    marks = [json.loads(r["extra"]) if isinstance(r["extra"], str) else r["extra"] for r in rows]
    assert [m["group_masked"] for m in marks] == [
        {"group": "g@1", "policy": "mask", "because": ["attempt 0: infra_error"]}
    ] * 2
    assert run_dict(Ledger(db), "w41-mask")["config"]["rewards"]["group"] == "mask"
    # the resolved member keeps its verifier verdict: only its training reward is withheld
    assert rows[0]["outcome"] == "resolved" and rows[0]["reward"] == 1.0


def test_retry_reruns_the_masked_member_and_keeps_the_group(engine, db: str, tasks: Path, tmp_path: Path) -> None:
    policy = RewardPolicy(group="retry", group_retries=1)
    rollouts = Rollouts(db, "w41-retry", tasks, rewards=policy, retries=0, runs_dir=tmp_path)
    members = [_oracle(rollouts, "plain-bugfix", 0), _oracle(rollouts, "w41-bad-image", 1)]

    async def rerun(attempt: int) -> Pending:  # the infrastructure is back: the same task runs fine
        return await rollouts._run_agent(get_agent("oracle", {}), "plain-bugfix", attempt, "g@2", None)

    results = rollouts.settle(members, step=2, wv=2, epoch=0, gid="g@2", rerun=rerun)
    assert [(r.attempt, r.reward, r.group_masked) for r in results] == [(0, 1.0, False), (2, 1.0, False)]
    rows = {r["attempt"]: r for r in trial_dicts(Ledger(db), "w41-retry")}
    failed = rows[1]["extra"] if isinstance(rows[1]["extra"], dict) else json.loads(rows[1]["extra"])
    assert rows[1]["outcome"] == "infra_error" and failed["group_masked"]["because"] == ["retried"]
    assert failed["train_reward"] is None and sorted(rows) == [0, 1, 2]

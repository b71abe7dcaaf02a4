"""SkyRL's generator level (rl/trainers.SkyRLGenerator): mini trials in Docker through the model gateway in front
of the real llama-cpp-python server (SmolLM2-135M), one batch of SkyRL's shape: a task whose trajectory is
trained on and a group whose image cannot be built.

Each output row must be the gateway's record of its trial, turn by turn: `prompt_token_ids` the first prompt,
`response_ids` every completion with the observation tokens between them, `loss_masks` 1 exactly on the
completions, `rollout_logprobs` the engine's logprobs on them (0.0 off the mask); a masked group gives rows of
reward 0.0 with nothing under the loss mask. The oracle (`expected_row`) rebuilds that from the raw `Call`s the
gateway handed over, not from trialbook/trajectory.py; a turn whose prompt does not extend the one before ends the row.
SmolLM2-135M never writes a parseable action, and mini-swe-agent then drops the reply from its history, so the
live episodes break at turn 2: the two tests without a model show the observation tokens of an exact episode.

SkyRL's trainer package (`skyrl` 0.4.0) needs Python >= 3.12, and its requirement `peft` pulls torch, which
PyPI has for 3.12 only as a CUDA build (~5 GB with its NVIDIA libraries); the project's own venv is 3.11. So:
- `test_rows_are_the_gateways_records_by_skyrls_source` (always, with the llm/docker part) checks the contract
  against the package's own source, read from its wheel (`pip download --no-deps skyrl==0.4.0`, 1.3 MB): the
  `GeneratorOutput` keys, `TrajectoryID` / `BatchMetadata` executed from skyrl/train/generators/base.py, and the
  trainer's `validate_generator_output` executed from skyrl/train/utils/trainer_utils.py;
- `test_the_generator_inside_the_installed_skyrl` runs `skyrl_generator(rollouts)` in a Python >= 3.12 venv with
  skyrl installed (tests/rl/skyrl_probe.py): a subclass of its `GeneratorInterface`, fed its own `GeneratorInput`,
  checked by its `validate_generator_output` and turned into training tensors by its
  `convert_prompts_responses_to_batch_tensors`. It runs where TRIALBOOK_SKYRL_PYTHON names that interpreter
  (scripts/setup-skyrl-venv.sh builds it) and is skipped, saying so, where not.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import logging
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer, model_file
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import Call, Gateway, template_of
from trialbook.rl.rollout import RolloutResult, Rollouts
from trialbook.rl.trainers import SkyRLGenerator, skyrl_row
from trialbook.trajectory import ARTIFACT, Trajectory, Turn

SKYRL = "0.4.0"
HERE = Path(__file__).parent
OPTIONS = {"max_turns": 2, "max_output_tokens": 24}
ROWS = [("plain-bugfix", 7), ("w41-bad-image", 0), ("w41-bad-image", 1)]  # (instance_id, repetition_id)
STEP, WV = 6, 4


class RecordingGateway(Gateway):
    """The gateway, keeping a copy of every trial's calls it hands over (the oracle's input)."""

    taken: list[list[Call]]

    def take(self, trial: str) -> list[Call]:
        calls = super().take(trial)
        self.__dict__.setdefault("taken", []).append(calls)
        return calls


def expected_row(calls: list[dict[str, Any]]) -> tuple[dict[str, list], bool]:
    """The training row a trial's calls make, rebuilt from the calls alone, and whether a turn broke the prefix.

    The row runs while each call's prompt starts with the previous prompt + completion; at the first call whose
    prompt does not (its history was re-rendered: mini-swe-agent drops a reply it could not parse and keeps only
    its format-error message), the row ends: that is the sequence the model really saw."""
    first = calls[0]
    seq = first["prompt_ids"] + first["completion_ids"]
    response, mask = list(first["completion_ids"]), [1] * len(first["completion_ids"])
    logprobs = [0.0 if v is None else v for v in first["logprobs"]]
    for call in calls[1:]:
        if call["prompt_ids"][: len(seq)] != seq:
            return {"prompt_token_ids": list(first["prompt_ids"]), "response_ids": response, "loss_mask": mask,
                    "logprobs": logprobs}, True  # fmt: skip
        obs = call["prompt_ids"][len(seq) :]
        response += obs + call["completion_ids"]
        mask += [0] * len(obs) + [1] * len(call["completion_ids"])
        logprobs += [0.0] * len(obs) + [0.0 if v is None else v for v in call["logprobs"]]
        seq = call["prompt_ids"] + call["completion_ids"]
    return {"prompt_token_ids": list(first["prompt_ids"]), "response_ids": response, "loss_mask": mask,
            "logprobs": logprobs}, False  # fmt: skip


def _calls(*turns: tuple[list[int], list[int], list[float | None]]) -> list[dict[str, Any]]:
    return [{"prompt_ids": p, "completion_ids": c, "logprobs": lp, "wv_start": 2, "wv_end": 2, "source": "returned",
             "finish_reason": "stop"} for p, c, lp in turns]  # fmt: skip


def _result(calls: list[dict[str, Any]], reward: float | None) -> RolloutResult:
    traj = Trajectory.of([Turn(c["prompt_ids"], c["completion_ids"], c["logprobs"], 2, 2) for c in calls])
    return RolloutResult(trial_id=1, task_id="t", group_id="t@3", attempt=0, step=3, wv=2, epoch=0,
                         outcome="unresolved", verifier_reward=0.0, reward=reward, masked=reward is None,
                         submitted=True, turns=len(calls), tokens=None, trajectory=traj)  # fmt: skip


@pytest.mark.parametrize("reward", [1.0, None])
def test_a_row_is_the_turns_with_their_observations_masked_out(reward: float | None) -> None:
    """Without a model: a two-turn episode (turn 2's prompt = turn 1's prompt + completion + an observation)
    is one row, the observation tokens off the loss mask; a masked trajectory keeps its tokens, trains on none."""
    calls = _calls(([1, 2, 3], [10, 11], [-0.1, -0.2]), ([1, 2, 3, 10, 11, 20, 21], [12, 13], [-0.3, None]))
    want, broken = expected_row(calls)
    assert not broken and want["prompt_token_ids"] == [1, 2, 3] and want["response_ids"] == [10, 11, 20, 21, 12, 13]
    assert want["loss_mask"] == [1, 1, 0, 0, 1, 1] and want["logprobs"] == [-0.1, -0.2, 0.0, 0.0, -0.3, 0.0]
    row = skyrl_row(_result(calls, reward))
    assert (row["prompt_token_ids"], row["response_ids"], row["logprobs"]) == (
        want["prompt_token_ids"], want["response_ids"], want["logprobs"])  # fmt: skip
    assert row["loss_mask"] == (want["loss_mask"] if reward is not None else [0] * 6)
    assert row["reward"] == (reward or 0.0) and row["broken"] is False


def test_a_turn_whose_history_was_rewritten_ends_the_row() -> None:
    """mini-swe-agent answers an unparseable reply with a format-error message and drops the reply: turn 2's
    prompt does not hold turn 1's completion, so the row is turn 1 alone, and it is counted as broken."""
    calls = _calls(([1, 2, 3], [10, 11], [-0.1, -0.2]), ([1, 2, 3, 20, 21], [12, 13], [-0.3, -0.4]))
    want, broken = expected_row(calls)
    assert broken and want["response_ids"] == [10, 11] and want["loss_mask"] == [1, 1]
    row = skyrl_row(_result(calls, 0.0))
    assert (row["response_ids"], row["loss_mask"], row["logprobs"], row["broken"]) == (
        want["response_ids"], want["loss_mask"], want["logprobs"], True)  # fmt: skip


def check_rows(out: dict[str, Any], taken: list[list[dict[str, Any]]]) -> None:
    """`out` (one batch of ROWS) against the gateway's records: the trained row is its calls exactly, the
    masked group's rows carry nothing to train on."""
    (calls,) = [c for c in taken if c]  # the bad image's trials never reached the model
    assert len(calls) >= 2, "mini's episode should span two model calls"
    want, broken = expected_row(calls)
    assert out["rollout_metrics"]["trialbook/masked"] == 2, (out["stop_reasons"], out["rollout_metrics"])
    assert out["prompt_token_ids"][0] == want["prompt_token_ids"]
    assert out["response_ids"][0] == want["response_ids"]
    assert out["loss_masks"][0] == want["loss_mask"] and sum(want["loss_mask"]) > 0
    assert out["rollout_logprobs"][0] == want["logprobs"]  # the engine's own floats, unrounded
    assert all(c["wv_start"] == WV for c in calls)
    assert out["rollout_metrics"]["trialbook/broken_prefix"] == int(broken)
    assert out["stop_reasons"][1:] == ["infra_error", "infra_error"] and out["rewards"][1:] == [0.0, 0.0]
    assert all(m == [] or not any(m) for m in out["loss_masks"][1:])
    assert out["rollout_metrics"]["trialbook/masked"] == 2


def check_ledger(db: str, run: str, out: dict[str, Any]) -> None:
    ledger = Ledger(db)
    rows = trial_dicts(ledger, run)
    (ok,) = [r for r in rows if r["task_id"] == "plain-bugfix"]
    assert (ok["step"], ok["wv"], ok["attempt"]) == (STEP, WV, 7) and ok["extra"]["rollout"]["staleness"] == STEP - WV
    assert out["rewards"][0] == ok["extra"]["train_reward"]
    traj = Trajectory.loads(ledger.artifact(ok["id"], ARTIFACT))
    assert traj.exact and ok["extra"]["rollout"]["prefix_breaks"] == len(traj.broken)
    seg = traj.segments()[0]  # the stored record (logprobs to 6 decimals) is the same sequence
    n = len(out["prompt_token_ids"][0])
    assert seg.input_ids == out["prompt_token_ids"][0] + out["response_ids"][0]
    assert seg.loss_mask[n:] == out["loss_masks"][0]
    assert [0.0 if v is None else v for v in seg.logprobs[n:]] == pytest.approx(out["rollout_logprobs"][0], abs=1e-6)
    bad = [r for r in rows if r["task_id"] == "w41-bad-image"]
    assert len(bad) == 2 and all(r["outcome"] == "infra_error" and r["extra"]["train_reward"] is None for r in bad)
    assert {r["extra"]["group_masked"]["group"] for r in bad} == {f"w41-bad-image@{STEP}"}


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    for name in ("plain-bugfix", "w41-bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", root / name)
    with (root / "w41-bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this image cannot be built' && exit 3\n")
    return root


# --- skyrl's own source, from its wheel ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def skyrl_wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    cache = Path(os.environ.get("TRIALBOOK_SKYRL_WHEELS") or Path.home() / ".cache" / "trialbook" / "skyrl")
    found = sorted(cache.glob(f"skyrl-{SKYRL}-*.whl"))
    if not found:  # its metadata says Python >= 3.12: ask pip for the file, not for an install here
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.12", "-d", str(cache), f"skyrl=={SKYRL}"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        found = sorted(cache.glob(f"skyrl-{SKYRL}-*.whl"))
        assert found, f"could not download skyrl {SKYRL}'s wheel from PyPI: {done.stderr.strip()[-500:]}"
    return zipfile.ZipFile(found[0])


def _definitions(source: str, names: set[str]) -> ast.Module:
    """The module's top-level classes, functions and assignments with these names, in source order."""

    def name(node: ast.stmt) -> str | None:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            return node.name
        if isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            return target.id if isinstance(target, ast.Name) else None
        return None

    tree = ast.parse(source)
    body = [n for n in tree.body if name(n) in names]
    assert {name(n) for n in body} == names, f"not in skyrl {SKYRL}'s source: {names - {name(n) for n in body}}"
    return ast.Module(body=body, type_ignores=[])


def _run_source(wheel: zipfile.ZipFile, path: str, names: set[str], namespace: dict[str, Any]) -> dict[str, Any]:
    module = _definitions(wheel.read(path).decode(), names)
    code = compile(module, f"skyrl-{SKYRL}/{path}", "exec", dont_inherit=True)  # not this file's __future__
    exec(code, namespace)  # noqa: S102 - the package's own code
    return namespace


def _typed_keys(wheel: zipfile.ZipFile, path: str, cls: str) -> list[str]:
    (node,) = _definitions(wheel.read(path).decode(), {cls}).body
    assert isinstance(node, ast.ClassDef)
    return [s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]


@pytest.mark.llm
@pytest.mark.docker
def test_rows_are_the_gateways_records_by_skyrls_source(
    engine, db: str, llama: LlamaServer, tasks: Path, skyrl_wheel: zipfile.ZipFile, tmp_path: Path
) -> None:
    base = "skyrl/train/generators/base.py"
    # the interface: one abstract coroutine generate(self, input_batch), a GeneratorInput in, a GeneratorOutput out
    (iface,) = _definitions(skyrl_wheel.read(base).decode(), {"GeneratorInterface"}).body
    assert isinstance(iface, ast.ClassDef)
    (gen,) = [f for f in iface.body if isinstance(f, ast.AsyncFunctionDef) and f.name == "generate"]
    assert [a.arg for a in gen.args.args] == list(inspect.signature(SkyRLGenerator.generate).parameters)
    assert inspect.iscoroutinefunction(SkyRLGenerator.generate)
    inputs = _typed_keys(skyrl_wheel, base, "GeneratorInput")
    outputs = _typed_keys(skyrl_wheel, base, "GeneratorOutput")
    types = _run_source(skyrl_wheel, base, {"TrajectoryID", "BatchMetadata", "TrainingPhase"},
                        {"__name__": "skyrl_base", **_typing()})  # fmt: skip
    checks = _run_source(
        skyrl_wheel, "skyrl/train/utils/trainer_utils.py",
        {"validate_generator_output", "_validate_per_token_side_channels", "_validate_step_wise_fields"},
        {"np": np, "logger": logging.getLogger("skyrl"), "GeneratorOutput": dict, **_typing(),
         "SAMPLE_SUPPORT_FIELD": _sample_support_field(skyrl_wheel)},
    )  # fmt: skip

    gateway = RecordingGateway(llama.url, chat_template=template_of(model_file())).start()
    try:
        rollouts = Rollouts(db, "w41-skyrl-gen", tasks, gateway=gateway, agent_options=OPTIONS, retries=0,
                            runs_dir=tmp_path, timeout_multiplier=5)  # fmt: skip
        gateway.set_weight_version(WV)
        batch = {
            "prompts": [[{"role": "user", "content": "(the task's instruction: trialbook's agent reads it)"}]] * 3,
            "env_classes": ["trialbook"] * 3,
            "env_extras": [{"task_id": task} for task, _ in ROWS],
            "sampling_params": None,
            "trajectory_ids": [types["TrajectoryID"](instance_id=t, repetition_id=r) for t, r in ROWS],
            "batch_metadata": types["BatchMetadata"](global_step=STEP, training_phase="train"),
        }
        assert sorted(batch) == sorted(inputs)
        out = asyncio.run(SkyRLGenerator(rollouts).generate(batch))
    finally:
        gateway.stop()
    assert set(out) <= set(outputs), set(out) - set(outputs)
    assert out["trajectory_ids"] == batch["trajectory_ids"]  # order kept, SkyRL's own objects back
    checks["validate_generator_output"](len(batch["prompts"]), out)
    check_rows(out, [[asdict(c) for c in calls] for calls in gateway.taken])
    check_ledger(db, "w41-skyrl-gen", out)


def _typing() -> dict[str, Any]:
    import dataclasses
    import typing

    return {"dataclass": dataclasses.dataclass, **{n: getattr(typing, n) for n in typing.__all__}}


def _sample_support_field(wheel: zipfile.ZipFile) -> str:
    path = "skyrl/backends/skyrl_train/utils/sample_support.py"
    return _run_source(wheel, path, {"SAMPLE_SUPPORT_FIELD"}, {})["SAMPLE_SUPPORT_FIELD"]


# --- the installed skyrl, Python >= 3.12 ---------------------------------------------------------------------


@pytest.mark.llm
@pytest.mark.docker
@pytest.mark.skipif(
    not os.environ.get("TRIALBOOK_SKYRL_PYTHON"),
    reason="TRIALBOOK_SKYRL_PYTHON is not set: skyrl needs Python >= 3.12 and a CUDA torch build from PyPI (~5 GB); "
    "scripts/setup-skyrl-venv.sh makes one (the source-level test ran instead)",
)
def test_the_generator_inside_the_installed_skyrl(
    engine, db: str, llama: LlamaServer, tasks: Path, tmp_path: Path
) -> None:
    python = os.environ["TRIALBOOK_SKYRL_PYTHON"]
    config = {"engine": llama.url, "template": list(template_of(model_file())), "db": db, "run": "w41-skyrl-312",
              "tasks": str(tasks), "runs_dir": str(tmp_path), "options": OPTIONS, "rows": ROWS, "step": STEP,
              "wv": WV}  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(Path(inspect.getfile(Rollouts)).parents[2])}  # this checkout's src/
    done = subprocess.run([python, str(HERE / "skyrl_probe.py"), json.dumps(config)], capture_output=True,
                          text=True, env=env, timeout=1200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["python"] >= [3, 12] and report["skyrl"] == SKYRL
    assert report["is_generator_interface"] and report["validated"]
    out = report["output"]
    assert out["trajectory_ids"] == [list(r) for r in ROWS]
    check_rows(out, report["taken"])
    check_ledger(db, "w41-skyrl-312", out)
    # SkyRL's own conversion to training tensors: the loss mask it trains with is the trial's
    tensors = report["tensors"]
    assert tensors["loss_mask_rows"] == [sum(m) for m in out["loss_masks"]]
    assert tensors["logprobs_on_mask"][0] == pytest.approx(
        sum(lp for lp, m in zip(out["rollout_logprobs"][0], out["loss_masks"][0], strict=True) if m), abs=1e-3
    )

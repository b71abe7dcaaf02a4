"""verifiers' own evaluation entry point (`vf-eval`, what prime-rl's environments are run with) drives trialbook's
environment (rl/verifiers_env.py) against the real llama-cpp-python server with SmolLM2-135M behind the model
gateway: every rollout is a graded `kind=train` trial in the ledger, its reward in verifiers' results is the
trial's training reward, its several turns' token ids are the gateway's records (and the ids verifiers itself read into
its trajectory, what prime-rl trains on), and a task whose image cannot be built masks its whole group.

Needs the `verifiers` extra (pip install -e '.[verifiers]'), the model server (scripts/ci-setup-model.sh), Docker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer, model_file
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import Gateway, template_of
from trialbook.trajectory import ARTIFACT, Trajectory

pytestmark = [pytest.mark.llm, pytest.mark.docker]

RUN, EXAMPLES_N, ROLLOUTS = "w41-vf", 2, 2


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with LlamaServer(n_ctx=2048) as server, Gateway(server.url, chat_template=template_of(model_file())) as gw:
        gw.set_weight_version(3)
        yield gw


def _tasks(root: Path) -> Path:
    for name in ("plain-bugfix", "w41-bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", root / name)
    with (root / "w41-bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this image cannot be built' && exit 3\n")
    return root


def _results(out: Path) -> list[dict]:
    (path,) = out.rglob("results.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_vf_eval_records_graded_trials_with_the_gateways_tokens(engine, db: str, gateway: Gateway,
                                                                tmp_path: Path) -> None:  # fmt: skip
    try:
        import verifiers  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"verifiers not installed ({exc}): pip install -e '.[verifiers]'", pytrace=False)
    tasks = _tasks(tmp_path / "tasks")
    args = {"tasks": str(tasks), "ledger": db, "run": RUN, "gateway": gateway.url, "step": 3, "max_turns": 3,
            "timeout_multiplier": 5, "runs_dir": str(tmp_path / "runs")}  # fmt: skip
    cmd = [sys.executable, "-m", "verifiers.legacy.scripts.eval", "trialbook.rl.verifiers_env", "-a", json.dumps(args),
           "-m", "smollm2-135m-instruct", "-b", gateway.url, "-k", "W41_NO_KEY", "-n", str(EXAMPLES_N),
           "-r", str(ROLLOUTS), "-t", "32", "-T", "0", "-S", '{"logprobs": true}', "-c", "4", "-d", "-s",
           "-C", "trajectory,trialbook", "-o", str(tmp_path / "vf")]  # fmt: skip
    env = {**os.environ, "W41_NO_KEY": "none"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    rows = {r["id"]: r for r in trial_dicts(Ledger(db), RUN)}
    results = _results(tmp_path / "vf")
    assert len(rows) == len(results) == EXAMPLES_N * ROLLOUTS
    ledger = Ledger(db)
    eos = gateway.engine._bare(gateway.engine.eos, None, 30)[0]  # type: ignore[attr-defined]
    for res in results:
        mine = res["trialbook"]
        row = rows[mine["trial_id"]]
        assert row["step"] == 3 and row["task_id"] == res["info"]["task_id"]
        assert res["reward"] == (row["extra"]["train_reward"] or 0.0)
        if row["task_id"] == "w41-bad-image":  # the image cannot be built: infra_error masks the whole group
            assert row["outcome"] == "infra_error" and row["extra"]["group_masked"]["group"] == "w41-bad-image@3"
            assert res["trialbook_masked"] == 1.0 and res["reward"] == 0.0
            continue
        assert row["outcome"] in ("resolved", "unresolved") and row["reward"] in (0.0, 1.0)
        assert res["trialbook_masked"] == 0.0 and "group_masked" not in row["extra"]
        assert row["wv"] == 3 and row["extra"]["rollout"]["staleness"] == 0
        traj = Trajectory.loads(ledger.artifact(row["id"], ARTIFACT))
        steps = res["trajectory"]
        # one gateway call per model turn verifiers took (several: a reply without a bash block is told so and
        # the episode goes on to max_turns), prefix-consistent, with the engine's own ids
        assert len(traj.turns) == len(steps) >= 2 and traj.exact and traj.broken == []
        for prev, turn in zip(traj.turns, traj.turns[1:], strict=False):  # observation tokens between the turns
            assert len(turn.prompt_ids) > len(prev.prompt_ids) + len(prev.completion_ids)
        for turn, step in zip(traj.turns, steps, strict=True):
            tokens = step["tokens"]  # verifiers' own record of the turn (read from the gateway's answer)
            assert tokens["prompt_ids"] == turn.prompt_ids and tokens["completion_ids"] == turn.completion_ids
            # and they are what the engine generated: its own detokenizer gives back the reply verifiers got
            ids = turn.completion_ids[:-1] if turn.completion_ids[-1:] == [eos] else turn.completion_ids
            assert "".join(gateway.engine._detokenize(i, None, 30) for i in ids) == step["completion"][0]["content"]
        # the training sequence: the mask is 1 exactly on the model's completions
        (seg,) = traj.segments()
        model_tokens = [i for t in traj.turns for i in t.completion_ids]
        assert [i for i, m in zip(seg.input_ids, seg.loss_mask, strict=True) if m] == model_tokens

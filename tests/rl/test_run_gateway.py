"""`trialbook run --gateway`: an eval run's mini trials keep their turns' exact token ids through the model gateway
when the engine returns none (llama-cpp-python's server: the gateway renders the GGUF's chat template and maps the
text to ids with the engine's tokenizer), and `train export-trajectories` reads such a run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledgerdicts import run_dict, trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer, model_file
from trialbook.ledger.store import Ledger
from trialbook.trajectory import ARTIFACT, Trajectory


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


def _run(cli, tmp_path: Path, url: str, run: str, *more: str):
    # every reply is the action (a regex matching any text): the agent keeps each reply in its history, so a turn's
    # prompt is the previous prompt and reply plus the observation; a 135M model's unparseable replies would be
    # dropped by mini-swe-agent's loop (a real break, recorded as one)
    return cli("run", str(EXAMPLES), "--task", "plain-bugfix", "--agent", "mini", "--endpoint", url, "--run", run,
               "--max-turns", "2", "--max-output-tokens", "24", "-c", "action_regex=(?s)(.+)",
               "--timeout-multiplier", "4", "--runs-dir", str(tmp_path / "runs"), *more)  # fmt: skip


@pytest.mark.llm
@pytest.mark.docker
def test_run_gateway_records_exact_prefix_consistent_turns(cli, db: str, llama: LlamaServer, tmp_path: Path) -> None:
    res = _run(cli, tmp_path, llama.url, "gw", "--gateway", "--chat-template", str(model_file()))
    assert res.exit_code == 0, res.stderr
    run = run_dict(Ledger(db), "gw")
    assert run["stack"]["gateway"] == {"engine": "llama-cpp-python", "engine_url": llama.url}
    assert run["config"]["agent_options"]["gateway"] == {"chat_template": str(model_file())}
    (trial,) = trial_dicts(Ledger(db), "gw")
    assert trial["turns"] == 2
    ledger = Ledger(db)
    traj = Trajectory.loads(ledger.artifact(trial["id"], ARTIFACT))
    assert len(traj.turns) == 2 and traj.exact and traj.broken == []
    first, second = traj.turns
    assert {first.source, second.source} == {"engine-tokenizer"}
    assert 0 < len(first.completion_ids) <= 24
    assert second.prompt_ids[: len(first.prompt_ids) + len(first.completion_ids)] == (
        first.prompt_ids + first.completion_ids
    )
    assert trial["extra"]["agent_info"]["gateway"]["exact"] is True
    folder = next((tmp_path / "runs" / "gw").glob("tb-gw-plain-bugfix-0-*"))
    assert (folder / "agent" / ARTIFACT).is_file()
    out = tmp_path / "t.jsonl"
    res = cli("train", "export-trajectories", "gw", "--out", str(out))
    assert res.exit_code == 0, res.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["exact"] and row["prefix_breaks"] == 0 and len(row["sequences"]) == 1
    assert [t["extends"] for t in row["turns"]] == [True, True]


@pytest.mark.llm
def test_run_gateway_before_llama_cpp_python_needs_the_model_file(cli, llama: LlamaServer, tmp_path: Path) -> None:
    res = _run(cli, tmp_path, llama.url, "gw-no-template", "--gateway")
    assert res.exit_code == 2
    assert res.stderr.count("\n") == 1 and "give --chat-template MODEL.gguf" in res.stderr, res.stderr
    assert not (tmp_path / "runs" / "gw-no-template").exists()


def test_chat_template_goes_with_gateway(cli, tmp_path: Path) -> None:
    res = _run(cli, tmp_path, "http://127.0.0.1:9/v1", "x", "--chat-template", str(tmp_path / "m.gguf"))
    assert res.exit_code == 2 and res.stderr == "error: --chat-template goes with --gateway\n"
    res = _run(cli, tmp_path, "http://127.0.0.1:9/v1", "x", "--gateway", "--chat-template", str(tmp_path / "m.gguf"))
    assert res.exit_code == 2 and res.stderr == f"error: --chat-template: no such file {tmp_path / 'm.gguf'}\n"
    res = _run(cli, tmp_path, "http://127.0.0.1:9/v1", "x", "--gateway", "--endpoint", "http://127.0.0.1:8/v1")
    assert res.exit_code == 2 and "--gateway fronts one model endpoint" in res.stderr

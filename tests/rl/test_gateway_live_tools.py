"""mini-swe-agent's own swebench.yaml (a bash tool, parallel tool calls) through the gateway against the real local
model (llama-cpp-python with SmolLM2-135M-Instruct, the CI's model part): a real `trialbook run` in Docker, every
turn recorded with the engine's own ids. The 135M model's chat template renders no tools and the model calls
none, so each reply is a format error for mini-swe-agent: the trial ends on its turn budget and is graded
unresolved. What is shown is the path: the leaderboard's scaffold, the gateway, the engine, the ids."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentcache import need_cli
from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer, model_file
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import Gateway, template_of
from trialbook.trajectory import Trajectory

pytestmark = [pytest.mark.llm, pytest.mark.docker]


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with LlamaServer(n_ctx=4096) as server, Gateway(server.url, chat_template=template_of(model_file())) as gw:
        yield gw


def test_mini_swe_agents_swebench_config_runs_a_task_through_the_gateway(
    engine, cli, db: str, gateway: Gateway, tmp_path: Path
) -> None:
    # 5 x the task's 60 s: on a loaded 2-core machine one call of the 135M model can take most of a minute
    res = cli("run", str(EXAMPLES), "--agent", "mini-swe-agent", "--endpoint", gateway.url_for("msa-live"),
              "--max-turns", "2", "--run", "msa-live", "--tasks", "plain-bugfix", "--retries", "0",
              "--runs-dir", str(tmp_path / "runs"), "--timeout-multiplier", "5")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    (trial,) = trial_dicts(ledger, "msa-live")
    assert trial["outcome"] == "agent_timeout" and "turn budget" in trial["exception_message"], trial
    assert trial["reward"] == 0.0 and trial["turns"] == 2
    calls = gateway.take("msa-live")
    assert [(c.index, c.source, c.api, c.role) for c in calls] == [
        (0, "engine-tokenizer", "chat", "policy"), (1, "engine-tokenizer", "chat", "policy")
    ]  # fmt: skip
    traj = Trajectory.from_calls(calls)
    assert traj.exact and all(t.prompt_ids and t.completion_ids for t in traj.turns)
    info = json.loads(ledger.artifact(trial["id"], "trajectory.json"))["info"]
    assert info["agent_config"] == "swebench.yaml" and info["exit_status"] == "LimitsExceeded"
    # mini-swe-agent keeps a reply with no valid action out of its history (only its format-error prompt goes in),
    # so the second prompt does not extend the first reply: the audit says so rather than training on a sequence
    # the model never saw
    assert traj.broken == [1]


@pytest.mark.agents
def test_an_agent_cli_before_an_engine_without_ids_asks_for_the_chat_template(cli, db: str, gateway: Gateway) -> None:
    """llama-cpp-python's server returns no token ids: an installed CLI's own gateway needs the model's chat template
    (`run --gateway --chat-template FILE` passes it on), and without it the run is one line before any trial.
    With it, aider's one turn against this model was recorded exact (docs/agents.md: 2796 prompt ids)."""
    need_cli("aider")
    res = cli("run", str(EXAMPLES), "--agent", "aider", "--endpoint", gateway.engine_url, "--run", "cli-no-ids",
              "--task", "plain-bugfix")  # fmt: skip
    assert res.exit_code == 2 and res.stderr == (
        f"error: the aider agent: the engine at {gateway.engine_url} (llama-cpp-python) returns no token ids: give "
        "--gateway --chat-template MODEL.gguf (the served model's file)\n"
    )
    assert "cli-no-ids" not in Ledger(db).run_names()

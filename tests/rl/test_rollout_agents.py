"""Rollouts with the leaderboard's scaffold (`Rollouts(agent="mini-swe-agent")`, rl/rollout.py): a GRPO group
member runs mini-swe-agent's own swebench.yaml through the gateway's per-trial URL, and the trial keeps its exact
tokens. The engine is the scripted vLLM-shaped one (tests/rl/scripted_engine.py) whose tool calls fix the bug."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from scripted_engine import ScriptedEngine

from agentcache import need_cli
from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import Gateway
from trialbook.rl.rollout import Rollouts
from trialbook.trajectory import ARTIFACT, Trajectory

pytestmark = pytest.mark.docker

FIX = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()


def _bash(call_id: str, command: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}  # fmt: skip


def test_a_group_of_the_leaderboards_scaffold_keeps_exact_tokens(engine, db: str, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "plain-bugfix", tasks / "plain-bugfix")
    submit = _bash("call_2", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    script = [{"content": "THOUGHT: fix.", "tool_calls": [_bash("call_1", FIX)]},
              {"content": "THOUGHT: submit.", "tool_calls": [submit]}]  # fmt: skip
    with ScriptedEngine(script) as model, Gateway(model.url, engine_kind="vllm") as gw:
        rollouts = Rollouts(db, "msa-rl", tasks, gateway=gw, agent="mini-swe-agent", agent_options={"max_turns": 4},
                            retries=0, runs_dir=tmp_path / "runs")  # fmt: skip
        gw.set_weight_version(3)
        (result,) = asyncio.run(rollouts.group("plain-bugfix", 1, step=3))
    assert (result.outcome, result.reward, result.wv) == ("resolved", 1.0, 3)
    ledger = Ledger(db)
    traj = Trajectory.loads(ledger.artifact(result.trial_id, ARTIFACT))
    assert len(traj.turns) == 2 and traj.exact and traj.broken == []
    (row,) = trial_dicts(ledger, "msa-rl")
    assert row["extra"]["agent"] == "mini-swe-agent" and row["extra"]["rollout"]["turns"] == 2
    assert ledger.get_run("msa-rl").stack["agent_config"] == "swebench.yaml"


def test_an_agent_without_a_model_endpoint_is_refused(engine, db: str, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="takes no model endpoint"):
        Rollouts(db, "nop-rl", EXAMPLES, endpoints=["http://127.0.0.1:9/v1"], agent="nop", runs_dir=tmp_path)


@pytest.mark.agents
def test_an_agent_cli_rolls_out_through_the_gateway_from_its_sandbox(engine, db: str, tmp_path: Path) -> None:
    """Codex CLI in the trial's sandbox (rl/cli_agents.py) behind the rollout's gateway: its own socket gateway
    passes each call on to the per-trial URL, where the rollout's record is taken."""
    need_cli("codex")
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "plain-bugfix", tasks / "plain-bugfix")
    toml = tasks / "plain-bugfix" / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 512", "memory_mb = 2048"))
    fix = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "exec_command", "arguments": json.dumps({"cmd": FIX})},
    }
    script = [{"content": "Fixing.", "tool_calls": [fix]}, {"content": "Done."}]
    with ScriptedEngine(script) as model, Gateway(model.url, engine_kind="vllm") as gw:
        rollouts = Rollouts(db, "codex-rl", tasks, gateway=gw, agent="codex", retries=0, runs_dir=tmp_path / "runs",
                            timeout_multiplier=4)  # fmt: skip
        (result,) = asyncio.run(rollouts.group("plain-bugfix", 1, step=1))
    assert (result.outcome, result.reward) == ("resolved", 1.0)
    traj = Trajectory.loads(Ledger(db).artifact(result.trial_id, ARTIFACT))
    assert len(traj.turns) == 2 and traj.exact and traj.broken == [] and traj.engine == "vllm"

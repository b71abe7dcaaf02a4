"""The `mini-swe-agent` agent (agents/miniswe.py): mini-swe-agent's own `swebench.yaml`, loaded unchanged from the
wheel (a bash tool, parallel tool calls, litellm underneath), solves plain-bugfix in a real `trialbook run` in Docker
through the model gateway, every turn recorded with its ids. The engine is the scripted vLLM-shaped one
(tests/rl/scripted_engine.py) whose replies are the tool calls that fix the bug: the 135M model that runs here
calls no tools."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import Gateway
from trialbook.trajectory import Trajectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl"))
from scripted_engine import ScriptedEngine  # noqa: E402

FIX = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"
CHECK = "cd /testbed && python3 -c 'import stats; print(stats.median([1, 2, 3, 4]))'"


def _bash(call_id: str, command: str) -> dict:
    function = {"name": "bash", "arguments": json.dumps({"command": command})}
    return {"id": call_id, "type": "function", "function": function}


SCRIPT = [
    {"content": "THOUGHT: fix median, then check it.", "reasoning_content": "Even lengths average the middle two.",
     "tool_calls": [_bash("call_1", FIX), _bash("call_2", CHECK)]},
    {"content": "THOUGHT: 2.5 is right; submit.", "tool_calls": [_bash("call_3", SUBMIT)]},
]  # fmt: skip


def test_unknown_configs_are_one_clear_line(cli) -> None:
    res = cli("run", str(EXAMPLES), "--agent", "mini-swe-agent", "--tasks", "plain-bugfix", "--run", "x")
    assert res.exit_code != 0 and "needs the model's URL" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    from trialbook.agents.miniswe import load_config
    from trialbook.errors import UserError

    with pytest.raises(UserError, match="no config 'swebenhc'"):
        load_config("swebenhc")


@pytest.mark.docker
def test_the_leaderboards_config_solves_a_task_through_the_gateway(engine, cli, db: str, tmp_path: Path) -> None:
    import minisweagent

    with ScriptedEngine(SCRIPT) as model, Gateway(model.url, engine_kind="vllm") as gw:
        res = cli("run", str(EXAMPLES), "--agent", "mini-swe-agent", "--endpoint", gw.url_for("msa-1"),
                  "--model", "policy", "--run", "msa", "--tasks", "plain-bugfix", "--retries", "0",
                  "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
        calls = gw.take("msa-1")
    assert res.exit_code == 0, res.stderr
    (trial,) = trial_dicts(Ledger(db), "msa")
    assert (trial["outcome"], trial["reward"], trial["turns"]) == ("resolved", 1.0, 2), trial["exception_message"]
    # mini-swe-agent's own prompt and tool, as the wheel ships them
    wheel = Path(minisweagent.__file__).parent / "config" / "benchmarks" / "swebench.yaml"
    first = model.requests[0]
    assert [t["function"]["name"] for t in first["tools"]] == ["bash"] and first["parallel_tool_calls"] is True
    assert "<pr_description>" in first["messages"][1]["content"] and "median" in first["messages"][1]["content"]
    # both tool calls of turn 1 ran, each answered in its own tool message (the second saw the fix: 2.5)
    results = {m["tool_call_id"]: m["content"] for m in model.requests[1]["messages"] if m["role"] == "tool"}
    assert set(results) == {"call_1", "call_2"} and "2.5" in results["call_2"]
    # every turn recorded with the engine's ids, one unbroken sequence
    assert [(c.index, c.source, c.finish_reason) for c in calls] == [(0, "returned", "tool_calls"),
                                                                      (1, "returned", "tool_calls")]  # fmt: skip
    traj = Trajectory.from_calls(calls)
    assert traj.exact and traj.broken == []
    # the run's stack names the config file and its hash (and the trajectory keeps them too)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    stack = Ledger(db).get_run("msa").stack
    assert (stack["agent_config"], stack["agent_config_sha256"]) == ("swebench.yaml", sha)
    assert stack["agent_loop"] == f"mini-swe-agent {minisweagent.__version__}"
    info = json.loads(Ledger(db).artifact(trial["id"], "trajectory.json"))["info"]
    assert (info["agent_config"], info["agent_config_sha256"]) == ("swebench.yaml", sha)


@pytest.mark.docker
def test_the_backticks_twin_parses_actions_from_text(engine, cli, db: str, tmp_path: Path) -> None:
    """`mini-swe-agent-backticks`: swebench_backticks.yaml with mini-swe-agent's text-based model class (no tools)."""

    def action(command: str) -> dict:
        return {"content": f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```"}

    with ScriptedEngine([action(FIX), action(SUBMIT)]) as model, Gateway(model.url, engine_kind="vllm") as gw:
        res = cli("run", str(EXAMPLES), "--agent", "mini-swe-agent-backticks", "--endpoint", gw.url_for("bt-1"),
                  "--model", "policy", "--run", "bt", "--tasks", "plain-bugfix", "--retries", "0",
                  "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
        calls = gw.take("bt-1")
    assert res.exit_code == 0, res.stderr
    (trial,) = trial_dicts(Ledger(db), "bt")
    assert (trial["outcome"], trial["reward"], trial["turns"]) == ("resolved", 1.0, 2), trial["exception_message"]
    assert all("tools" not in r for r in model.requests)  # text-parsed: no tool offered
    assert "mswea_bash_command" in model.requests[0]["messages"][0]["content"]
    assert Ledger(db).get_run("bt").stack["agent_config"] == "swebench_backticks.yaml"
    assert len(calls) == 2 and Trajectory.from_calls(calls).broken == []

"""The trial page's trajectory, turn by turn: a real mini-swe-agent loop's saved trajectory (messages, the
commands it ran, their outputs) and a Harbor ATIF one (message, tool call, observation)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from trialbook.web.text import trajectory_turns

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
NASTY = "printf '<b>hi</b> \\033[31mred\\033[0m\\n'"


def test_mini_swe_agent_trajectory_shows_messages_commands_and_outputs(tmp_path: Path) -> None:
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel, make_output

    replies = [
        make_output(f"THOUGHT: look first\n```mswea_bash_command\n{NASTY}\n```", [{"command": NASTY}]),  # text-based
        make_output("THOUGHT: done", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"}]),  # tool-calling
    ]
    agent = DefaultAgent(DeterministicModel(outputs=replies), LocalEnvironment(cwd=str(tmp_path)),
                         system_template="You fix bugs.", instance_template="Task: {{task}}", step_limit=5)  # fmt: skip
    assert agent.run(task="fix the bug")["exit_status"] == "Submitted"
    turns = trajectory_turns(json.dumps(agent.serialize(), default=str))
    assert turns is not None
    roles = [t.role for t in turns]
    assert roles[:5] == ["system", "user", "assistant", "user", "assistant"]
    assert NASTY in turns[2].text and "command" not in roles[2:4]  # the command is in the reply: not repeated
    assert "<b>hi</b> red" in turns[3].text and "\x1b" not in turns[3].text  # its output, colour codes dropped
    assert roles[5] == "command" and turns[5].text == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    assert [t.n for t in turns] == list(range(1, len(turns) + 1))


def test_atif_trajectory_shows_message_tool_call_and_observation() -> None:
    doc = {
        "schema_version": "ATIF-v1.2",
        "steps": [
            {"step_id": 1, "source": "user", "message": "Fix the failing test."},
            {"step_id": 2, "source": "agent", "message": "Running the tests.",
             "tool_calls": [{"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "pytest -q"}}],
             "observation": {"results": [{"source_call_id": "c1", "content": "\x1b[31m1 failed\x1b[0m"}]}},
        ],
    }  # fmt: skip
    turns = trajectory_turns(json.dumps(doc))
    assert turns is not None
    assert [t.role for t in turns] == ["user", "agent", "tool call", "observation"]
    assert turns[1].text == "Running the tests." and '"command": "pytest -q"' in turns[2].text
    assert turns[3].text == "1 failed"  # the observation, colour codes dropped


def test_unreadable_trajectory_is_none() -> None:
    assert trajectory_turns("not json {") is None and trajectory_turns("{}") is None

"""Every way the `mini` agent's loop ends, forced by a scripted model server (a real HTTP server on
127.0.0.1, tests/httpd.py) and recorded by a real `trialbook run` in Docker: format_error,
context_overflow, agent_timeout by turns and by time, and a submission the verifier resolves.
Each early stop is still graded: the verifier runs on the sandbox as the agent left it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from httpd import LocalServer
from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASK = "plain-bugfix"  # its agent timeout is 60 s; the untouched repo fails its tests (reward 0)
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
TOO_LONG = "This model's maximum context length is 2048 tokens. However, you requested 2300 tokens."


def action(command: str) -> str:
    return f"THOUGHT: next step.\n```mswea_bash_command\n{command}\n```"


class ScriptedModel(LocalServer):
    """An OpenAI-compatible server whose n-th chat reply is `script(n)`: text, or (status, error message)."""

    def __init__(self, script: Callable[[int], str | tuple[int, str]]) -> None:
        self.chats = 0

        def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            if method == "GET" and path == "/v1/models":
                return 200, json.dumps({"data": [{"id": "scripted", "owned_by": "trialbook-tests"}]}).encode()
            if method != "POST" or path != "/v1/chat/completions":
                return 404, b"{}"
            if json.loads(body).get("max_tokens") == 1:  # the start-up's one-token check: not a trial's call
                return 200, json.dumps(
                    {"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}]}
                ).encode()
            self.chats += 1
            reply = script(self.chats)
            if isinstance(reply, tuple):
                return reply[0], json.dumps({"error": {"message": reply[1], "type": "invalid_request_error"}}).encode()
            body = {"choices": [{"message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 100, "completion_tokens": 10}}  # fmt: skip
            return 200, json.dumps(body).encode()

        super().__init__(respond)


def _run(cli, db: str, tmp_path: Path, name: str, script: Callable[[int], Any], *options: str) -> tuple[dict, dict]:
    server = ScriptedModel(script)
    try:
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", server.url, "--run", name, "--tasks", TASK,
                  "--retries", "0", "--runs-dir", str(tmp_path / "runs"), *options)  # fmt: skip
    finally:
        server.close()
    assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    (trial,) = trial_dicts(ledger, name)
    traj = json.loads(ledger.artifact(trial["id"], "trajectory.json"))
    assert trial["turns"] == server.chats  # every model call is a turn, counted once
    return trial, traj["info"]


def _ended(trial: dict, info: dict, outcome: str, exception: str | None, exit_status: str) -> None:
    assert (trial["outcome"], trial["exception"], info["exit_status"]) == (outcome, exception, exit_status), trial[
        "exception_message"
    ]


def _graded_unresolved(trial: dict) -> None:
    assert trial["reward"] == 0.0, (trial["outcome"], trial["exception_message"])  # graded: tests ran, failed


def test_replies_without_an_action_end_as_format_error(engine, cli, db: str, tmp_path: Path) -> None:
    trial, info = _run(cli, db, tmp_path, "fmt", lambda n: "I would look at stats.py first.")
    _ended(trial, info, "format_error", "FormatError", "RepeatedFormatError")
    assert trial["turns"] == 3  # max_format_errors in a row
    _graded_unresolved(trial)
    # what the model said is kept beside each format-error prompt (mini-swe-agent itself drops it)
    ledger = Ledger(db)
    traj = json.loads(ledger.artifact(trial["id"], "trajectory.json"))
    replies = [m["extra"]["model_reply"] for m in traj["messages"] if "model_reply" in (m.get("extra") or {})]
    assert replies == ["I would look at stats.py first."] * 3
    assert ledger.artifact(trial["id"], "agent.log").count("I would look at stats.py first.") == 3


def test_a_context_refusal_ends_as_context_overflow(engine, cli, db: str, tmp_path: Path) -> None:
    trial, info = _run(cli, db, tmp_path, "ctx", lambda n: action("ls") if n == 1 else (400, TOO_LONG))
    _ended(trial, info, "context_overflow", "ContextOverflowError", "ContextOverflow")
    assert "maximum context length" in trial["exception_message"] and trial["turns"] == 2
    _graded_unresolved(trial)


def test_the_turn_budget_ends_as_agent_timeout(engine, cli, db: str, tmp_path: Path) -> None:
    trial, info = _run(cli, db, tmp_path, "turns", lambda n: action("true"), "--max-turns", "2")
    _ended(trial, info, "agent_timeout", "AgentTimeoutError", "LimitsExceeded")
    assert "turn budget" in trial["exception_message"] and trial["turns"] == 2 and trial["tokens"] == 220
    _graded_unresolved(trial)


def test_the_time_budget_ends_as_agent_timeout(engine, cli, db: str, tmp_path: Path) -> None:
    started = time.monotonic()
    # 60 s x 0.05 = a 3 s budget; every action sleeps 1 s, so the loop's clock runs out after a few turns
    trial, info = _run(cli, db, tmp_path, "time", lambda n: action("sleep 1"), "--timeout-multiplier", "0.05")
    _ended(trial, info, "agent_timeout", "AgentTimeoutError", "TimeExceeded")
    assert "3 s limit" in trial["exception_message"] and 2 <= trial["turns"] <= 4
    assert trial["extra"]["agent_timeout_s"] == pytest.approx(3.0)
    assert time.monotonic() - started < 60  # stopped by its budget, not by the task's own 60 s
    _graded_unresolved(trial)


def test_a_submitted_fix_is_resolved(engine, cli, db: str, tmp_path: Path) -> None:
    fix = (EXAMPLES / TASK / "solution" / "solve.sh").read_text()
    trial, info = _run(cli, db, tmp_path, "fix", lambda n: action(fix) if n == 1 else action(SUBMIT))
    _ended(trial, info, "resolved", None, "Submitted")
    assert trial["reward"] == 1.0 and trial["turns"] == 2

"""The agent CLIs people use (agents/installed.py), each run headless at its pinned version through the model gateway:
Codex CLI speaks the Responses API (streamed), Claude Code Anthropic's Messages API, opencode and aider chat
completions. The engine is the scripted vLLM-shaped one (tests/rl/scripted_engine.py): its first reply is a tool call
(each CLI's own shell tool) that fixes plain-bugfix's median and runs it, its second a closing line. Each CLI runs
the command, and the gateway records the policy's turns with the engine's ids as one unbroken sequence; a side call
(a session title on the small model) is recorded tagged `side` and left out of the trajectory a trainer reads.
aider, which has no shell tool, runs in test_cli_agents_sandbox.py only.

These run the binaries on this machine in a scratch repository (inside a trial's sandbox:
test_cli_agents_sandbox.py); a CLI not in the cache fails the test with the command that installs it
(tests/agentcache.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcache import need_cli
from trialbook.agents.installed import CLI_AGENTS, headless
from trialbook.rl.gateway import Gateway
from trialbook.trajectory import Trajectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl"))
from scripted_engine import ScriptedEngine  # noqa: E402

BUGGY = "def median(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
FIX = (
    "cat > stats.py <<'PY'\ndef median(values):\n    ordered = sorted(values)\n    n = len(ordered)\n"
    "    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2\nPY\n"
    "python3 -c 'import stats; print(stats.median([1, 2, 3, 4]))'"
)
TOOL = {"codex": ("exec_command", "cmd"), "claude-code": ("Bash", "command"), "opencode": ("bash", "command")}
# the side calls each makes here: opencode asks its small model for a session title first; Claude Code would too,
# but its headless set-up turns off non-essential traffic (the test below turns it back on); Codex makes none
SIDE_CALLS = {"codex": 0, "claude-code": 0, "opencode": 1}


def _script(name: str) -> list:
    tool, key = TOOL[name]
    act = {"reasoning_content": "Even lengths average the middle two.", "content": "Fixing median.",
           "tool_calls": [{"id": "call_fix", "type": "function",
                           "function": {"name": tool, "arguments": json.dumps({key: FIX})}}]}  # fmt: skip
    replies = [act, {"content": "Done: median([1, 2, 3, 4]) is 2.5."}]

    def reply(body: dict) -> dict:  # a side call (a title) gets a title; the policy's turns the script
        return {"content": "Fix median"} if body.get("model") == "side" else replies.pop(0)

    return [reply] * 4


def _repo(tmp_path: Path) -> tuple[Path, Path]:
    work, home = tmp_path / "repo", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "stats.py").write_text(BUGGY)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "add", "stats.py"], cwd=work, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "buggy"], cwd=work,
                   check=True)  # fmt: skip
    return work, home


def _headless(name: str, engine: ScriptedEngine, work: Path, home: Path, drop: tuple[str, ...] = ()) -> tuple:
    """Run NAME once through a gateway in front of `engine`: (the finished process, the calls recorded)."""
    with Gateway(engine.url, engine_kind="vllm", side_models=("side",)) as gw:
        argv, env = headless(name, gw.url_for(f"{name}-1"), "policy", "Fix median in stats.py.", str(work), str(home))
        env = {k: v for k, v in {**os.environ, **env}.items() if k not in drop}
        done = subprocess.run(argv, env=env, cwd=work, capture_output=True, text=True, timeout=240,
                              stdin=subprocess.DEVNULL)  # fmt: skip
        return done, gw.take(f"{name}-1")


@pytest.mark.agents
@pytest.mark.parametrize("name", sorted(TOOL))
def test_the_cli_fixes_the_bug_through_the_gateway_and_every_turn_is_recorded(name: str, tmp_path: Path) -> None:
    need_cli(name)
    work, home = _repo(tmp_path)
    with ScriptedEngine(_script(name)) as engine:
        done, calls = _headless(name, engine, work, home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "2.5" in done.stdout  # the command's output, in the CLI's own event stream
    assert "(ordered[n // 2 - 1] + ordered[n // 2]) / 2" in (work / "stats.py").read_text()
    policy = [c for c in calls if c.role == "policy"]
    assert [(c.api, c.finish_reason) for c in policy] == [
        (CLI_AGENTS[name].api, "tool_calls"),
        (CLI_AGENTS[name].api, "stop"),
    ]
    traj = Trajectory.from_calls(calls)
    assert len(traj.turns) == 2 and traj.exact and traj.broken == []
    # the tool's output reached the engine as the answer to the engine's own call id
    answers = [m for m in engine.requests[-1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_fix"] and "2.5" in json.dumps(answers)
    assert [c.model for c in calls if c.role == "side"] == ["side"] * SIDE_CALLS[name]


@pytest.mark.agents
def test_claude_codes_title_call_is_tagged_side_and_left_out_of_the_trajectory(tmp_path: Path) -> None:
    """With its non-essential traffic on (as a user's own Claude Code runs), it first asks its small fast model for
    the session's title: that call is recorded, tagged `side`, and the trajectory holds the two policy turns only."""
    need_cli("claude-code")
    work, home = _repo(tmp_path)
    with ScriptedEngine(_script("claude-code")) as engine:
        done, calls = _headless("claude-code", engine, work, home, drop=("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",))
    assert done.returncode == 0, done.stderr[-2000:]
    side = [c for c in calls if c.role == "side"]
    assert [(c.model, c.api) for c in side] == [("side", "messages")]
    assert "title" in json.dumps(engine.requests[0]) and engine.requests[0]["model"] == "side"
    traj = Trajectory.from_calls(calls)
    assert len(calls) == 3 and len(traj.turns) == 2 and traj.exact and traj.broken == []
    assert all(t.completion_ids != side[0].completion_ids for t in traj.turns)


def test_agents_list_and_a_bad_name(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIALBOOK_AGENTS_DIR", str(tmp_path))  # an empty cache: nothing installed
    res = cli("agents", "list", "--json", use_db=False)
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert [(r["name"], r["version"], r["api"], r["binary"]) for r in rows] == [
        ("codex", "0.171.0", "responses", ""),
        ("claude-code", "2.1.197", "messages", ""),
        ("opencode", "1.18.33", "chat", ""),
        ("aider", "0.86.2", "chat", ""),
    ]
    bad = cli("agents", "install", "goose", use_db=False)
    assert (
        bad.exit_code == 2
        and bad.stderr == "error: no installable agent 'goose' (known: aider, claude-code, codex, opencode)\n"
    )
    assert not any(tmp_path.iterdir())

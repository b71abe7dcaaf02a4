"""`--agent codex | claude-code | opencode | aider` (rl/cli_agents.py): each CLI, mounted read-only from the agents
cache into plain-bugfix's sandbox, runs headless there and reaches its model only through the gateway's socket (the
sandbox has no network): a real `trialbook run` in Docker, against the scripted engine (tests/rl/scripted_engine.py)
whose tool call fixes the bug and, in the same sandbox, probes a package index and a port of the host. The trial
resolves, both turns are recorded exact (a side call, opencode's title, recorded apart), and the probe reached
neither. aider, which has no shell tool, gets the fix as a search/replace block; on an image whose python3 is not
the one its install is for, its trial ends with one line saying so. A CLI not in the cache fails the test."""

from __future__ import annotations

import ipaddress
import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from agentcache import need_cli
from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents import installed
from trialbook.agents.installed import CLI_AGENTS
from trialbook.ledger.store import Ledger
from trialbook.trajectory import ARTIFACT, Trajectory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rl"))
from scripted_engine import ScriptedEngine  # noqa: E402

pytestmark = [pytest.mark.docker, pytest.mark.agents]

TOOL = {"codex": ("exec_command", "cmd"), "claude-code": ("Bash", "command"), "opencode": ("bash", "command")}
SIDE_CALLS = {"codex": 0, "claude-code": 0, "opencode": 1}  # opencode's session title, on its small model
EDIT = (
    "/testbed/stats.py\n```python\n<<<<<<< SEARCH\n    return ordered[len(ordered) // 2]\n=======\n"
    "    n = len(ordered)\n    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2\n"
    ">>>>>>> REPLACE\n```\n"
)
FIX = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()
PROBE = """python3 - <<'PY'
import socket
for what, addr in (("index", ("pypi.org", 443)), ("host", ("{host}", {port}))):
    try:
        socket.create_connection(addr, 3).close()
        print(what, "reachable")
    except OSError as exc:
        print(what, "unreachable:", type(exc).__name__)
PY"""


@pytest.fixture()
def host_port(engine) -> Iterator[tuple[str, int]]:
    """A port listening on the host's Docker bridge address: what a container with a network would reach."""
    config = engine.networks.get("bridge").attrs["IPAM"]["Config"][0]
    bridge = config.get("Gateway") or str(next(ipaddress.ip_network(config["Subnet"]).hosts()))  # docker0's address
    srv = socket.socket()
    srv.bind((bridge, 0))
    srv.listen(8)
    threading.Thread(target=lambda: [srv.accept()[0].close() for _ in range(8)], daemon=True).start()
    socket.create_connection(srv.getsockname(), 3).close()  # the host itself reaches it
    yield srv.getsockname()
    srv.close()


@pytest.fixture()
def tasks(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "plain-bugfix", root / "plain-bugfix")
    toml = root / "plain-bugfix" / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 512", "memory_mb = 2048"))  # the CLIs' own runtimes
    return root


@pytest.mark.parametrize("name", sorted(TOOL))
def test_the_cli_resolves_plain_bugfix_in_its_sandbox_on_the_model_only_network(
    name: str, cli, db: str, tasks: Path, tmp_path: Path, host_port: tuple[str, int]
) -> None:
    need_cli(name)
    tool, key = TOOL[name]
    command = FIX + "\n" + PROBE.format(host=host_port[0], port=host_port[1])
    act = {"reasoning_content": "Fix, then check what this sandbox can reach.", "content": "Fixing median.",
           "tool_calls": [{"id": "call_fix", "type": "function",
                           "function": {"name": tool, "arguments": json.dumps({key: command})}}]}  # fmt: skip
    replies = [act, {"content": "Done."}]

    def reply(body: dict) -> dict:
        return {"content": "Fix median"} if body.get("model") == "side" else replies.pop(0)

    with ScriptedEngine([reply] * 4) as engine:
        res = cli("run", str(tasks), "--agent", name, "--endpoint", engine.url, "--model", "policy", "--run", name,
                  "--tasks", "plain-bugfix", "--retries", "0", "--runs-dir", str(tmp_path / "runs"),
                  "--timeout-multiplier", "4")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    (trial,) = trial_dicts(ledger, name)
    assert (trial["outcome"], trial["reward"]) == ("resolved", 1.0), (trial["exception_message"], trial["extra"])
    # the tool's output came back to the engine: the index and the host's port were out of reach
    answer = json.dumps([m for m in engine.requests[-1]["messages"] if m["role"] == "tool"])
    assert "index unreachable" in answer and "host unreachable" in answer, answer
    traj = Trajectory.loads(ledger.artifact(trial["id"], ARTIFACT))
    assert len(traj.turns) == 2 and traj.exact and traj.broken == []
    assert trial["turns"] == 2 and trial["extra"]["agent_info"]["api"] == CLI_AGENTS[name].api
    assert trial["extra"]["agent_info"]["side_calls"] == SIDE_CALLS[name]  # recorded, not in the trajectory


def _run_aider(cli, tasks: Path, tmp_path: Path, run: str) -> tuple:
    with ScriptedEngine([{"content": "Average the two middle values.\n\n" + EDIT}, {"content": "Done."}]) as engine:
        res = cli("run", str(tasks), "--agent", "aider", "--endpoint", engine.url, "--model", "policy", "--run", run,
                  "--tasks", "plain-bugfix", "--retries", "0", "--runs-dir", str(tmp_path / "runs"),
                  "--timeout-multiplier", "4")  # fmt: skip
    return res, engine


def test_aider_resolves_plain_bugfix_in_its_sandbox(cli, db: str, tasks: Path, tmp_path: Path) -> None:
    """aider on the sandbox's own python3 (3.11 in trialbook-base:bookworm), its install mounted read-only: the
    engine's edit applied, the trial resolves, its one turn recorded exact through the socket gateway, and the
    diff graded holds the edit and nothing of aider's."""
    need_cli("aider")
    res, engine = _run_aider(cli, tasks, tmp_path, "aider")
    assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    (trial,) = trial_dicts(ledger, "aider")
    assert (trial["outcome"], trial["reward"]) == ("resolved", 1.0), (trial["exception_message"], trial["extra"])
    assert engine.requests[0]["model"] == "policy" and engine.requests[0]["stream"] is True
    traj = Trajectory.loads(ledger.artifact(trial["id"], ARTIFACT))
    assert len(traj.turns) == 1 and traj.exact
    info = trial["extra"]["agent_info"]
    assert trial["turns"] == 1 and (info["api"], info["side_calls"]) == ("chat", 0)
    # the change graded is the edit alone: no commit, no .gitignore line, no history file of aider's own
    patch = ledger.artifact(trial["id"], "patch.diff") or ""
    assert [ln for ln in patch.splitlines() if ln.startswith("diff --git")] == ["diff --git a/stats.py b/stats.py"]


def test_aider_on_an_image_with_another_python_is_one_line(
    cli, db: str, tasks: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its install is CPython 3.11 wheels: pinned to another version (as the SWE-bench images here have 3.9, the
    sandbox's 3.11 is the other one), the trial ends before aider starts, with one line naming both versions."""
    need_cli("aider")
    monkeypatch.setitem(CLI_AGENTS, "aider", replace(CLI_AGENTS["aider"], python="3.9"))
    assert installed.agent("aider").python == "3.9"
    res, engine = _run_aider(cli, tasks, tmp_path, "aider-py")
    assert res.exit_code == 1 and "1 trial(s) ended infra_error" in res.stderr, res.stderr
    (trial,) = trial_dicts(Ledger(db), "aider-py")
    assert trial["exception_message"] == (
        "aider runs on Python 3.9 (its install's wheels) and task plain-bugfix's image has python3 3.11"
    )
    assert engine.requests == []

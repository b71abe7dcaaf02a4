"""Your own agent: the example agent by import path, and an agent command run inside the sandbox; both
through the same limits, error policy and verifier as the built-in agents (real Docker, example tasks)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paths import EXAMPLES, REPO

REPLAY = REPO / "examples" / "agents" / "replay_agent.py"
FIX_FETCH = "sed -i 's|    return get_bytes(url, timeout)|    return json.loads(get_bytes(url, timeout))|' fetch.py"


def _trials(cli, run: str) -> dict[str, dict]:
    res = cli("trials", run, "--json")
    assert res.exit_code == 0, res.stderr
    return {t["task_id"]: t for t in json.loads(res.stdout)["trials"]}


def test_example_agent_by_file_path(engine, cli, db, tmp_path: Path):
    runs = tmp_path / "runs"
    res = cli("run", str(EXAMPLES), "--agent", f"{REPLAY}:ReplayAgent", "--run", "replay",
              "--task", "plain-bugfix,proxy-env", "--runs-dir", str(runs))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert f"trial folders: {runs / 'replay'}/" in res.stderr
    trials = _trials(cli, "replay")
    assert trials["plain-bugfix"]["outcome"] == "resolved"  # its replayed fix, graded by the task's verifier
    assert trials["proxy-env"]["outcome"] == "unresolved"  # .decode() is not json.loads: the tests say so
    assert Path(trials["plain-bugfix"]["folder"]).parent == runs / "replay"
    agent_log = cli("log", str(trials["plain-bugfix"]["id"]), "--agent").stdout
    assert agent_log.count("+ python3 -c") == 2 and "3\n" in agent_log and "2.5\n" in agent_log
    patch = cli("log", str(trials["plain-bugfix"]["id"]), "--patch").stdout
    assert "stats.py" in patch and "+    mid = len(ordered) // 2" in patch
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    row = ledger.get_run("replay")
    assert row.config["agent"] == f"{REPLAY}:ReplayAgent"
    (t,) = [t for t in ledger.trial_rows(row.id) if t.task_id == "plain-bugfix"]
    assert t.extra["agent"] == "replay" and t.turns == 3
    steps = json.loads(ledger.artifact(t.id, "trajectory.json") or "[]")
    assert [s["exit_code"] for s in steps] == [0, 0, 0]


def test_agent_command_in_the_sandbox(engine, cli, db, tmp_path: Path):
    cmd = f'echo "task: $(echo "$TRIALBOOK_INSTRUCTION" | head -1)"; cd /testbed && {FIX_FETCH} || sleep 30'
    res = cli("run", str(EXAMPLES), "--agent-cmd", cmd, "--run", "cmd", "--task", "proxy-env,slow-solution",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    trials = _trials(cli, "cmd")
    assert trials["proxy-env"]["outcome"] == "resolved"
    # slow-solution has no fetch.py: `sleep 30` meets its 3 s agent budget, and the sandbox is still graded
    slow = trials["slow-solution"]
    assert (slow["outcome"], slow["reward"], slow["exception"]) == ("agent_timeout", 0.0, "AgentTimeoutError")
    assert slow["duration_s"] < 25
    log = cli("log", str(trials["proxy-env"]["id"]), "--agent").stdout
    assert log.startswith("task: `fetch.get_json(url)` should return the decoded JSON body")
    from trialbook.ledger.store import Ledger

    ledger = Ledger(db)
    run = ledger.get_run("cmd")
    assert run.config["agent"] == "cmd" and run.config["agent_options"] == {"command": cmd}
    assert {t.extra["agent"] for t in ledger.trial_rows(run.id)} == {"cmd"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "no_such_module_w43:Agent"], "cannot import no_such_module_w43: ModuleNotFoundError"),
        (["--agent", f"{REPLAY}:Nope"], "has no attribute 'Nope'"),
        (["--agent", "json:JSONDecoder"], "has no run(sandbox, task, timeout) method"),
        (["--agent", "missing/agent.py:A"], "no such file"),
        (["--agent", "oracle", "--agent-cmd", "true"], "give --agent or --agent-cmd, not both"),
        ([], "--agent-cmd 'CMD' is needed"),
        (["--agent", "nop", "--model", "m"], "--model: only the mini agent takes these options"),
    ],
)
def test_bad_agents_are_one_line_before_any_container(cli, db, tmp_path: Path, args: list[str], message: str):
    res = cli("run", str(EXAMPLES), *args, "--run", "bad", "--runs-dir", str(tmp_path / "runs"))
    assert res.exit_code == 2 and message in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not Path(db).exists() or json.loads(cli("runs", "--json").stdout) == []


def test_module_import_path_from_the_working_directory(monkeypatch: pytest.MonkeyPatch):
    from trialbook.agents.registry import get_agent

    monkeypatch.chdir(REPLAY.parent)
    monkeypatch.setattr("sys.path", [p for p in __import__("sys").path if p not in ("", str(REPLAY.parent))])
    agent = get_agent("replay_agent:ReplayAgent")
    assert type(agent).__name__ == "ReplayAgent" and agent.name == "replay"

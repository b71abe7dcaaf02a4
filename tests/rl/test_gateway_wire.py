"""The gateway keeps the whole exchange (rl/gateway.py, chat_wire.py, responses_api.py, messages_api.py): an engine
that replies with reasoning, text and parallel tool calls, and returns token ids as vLLM does (a scripted one,
tests/rl/scripted_engine.py: no engine that runs here calls tools), is heard unchanged by the unmodified OpenAI
and Anthropic SDKs through chat completions (plain and streamed), the Responses API and the Messages API; every
call is recorded with the engine's ids, and a two-turn tool-calling episode stays one token-exact sequence."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest
import requests
from scripted_engine import ScriptedEngine, body_of, ids, render

from trialbook.rl.gateway import Gateway
from trialbook.trajectory import Trajectory

TOOLS = [{"type": "function", "function": {"name": "bash", "description": "Run a shell command.",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                         "required": ["command"]}}}]  # fmt: skip
ACT = {  # turn 1: reasoning, a line of text and two parallel tool calls
    "reasoning_content": "The bug is in calc.py; look first.",
    "content": "Let me look.",
    "tool_calls": [
        {"id": "call_a1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
        {"id": "call_b2", "type": "function", "function": {"name": "bash", "arguments": '{"command":"cat calc.py"}'}},
    ],
}
DONE = {"content": "Fixed."}  # turn 2: text only
SYSTEM, TASK = "You fix bugs.", "Fix calc.py."
OUTPUTS = {"call_a1": "calc.py\n", "call_b2": "def add(a, b):\n    return a - b\n"}


@pytest.fixture()
def engine() -> Iterator[ScriptedEngine]:
    with ScriptedEngine([ACT, DONE]) as eng:
        yield eng


@pytest.fixture()
def gateway(engine: ScriptedEngine) -> Iterator[Gateway]:
    with Gateway(engine.url, engine_kind="vllm", side_models=("helper",)) as gw:
        yield gw


def _assert_recorded_exact(gw: Gateway, engine: ScriptedEngine, trial: str, api: str) -> None:
    """Two calls, each with the ids of the prompt the engine rendered, one unbroken sequence."""
    calls = gw.take(trial)
    assert [(c.api, c.role, c.source, c.finish_reason) for c in calls] == [
        (api, "policy", "returned", "tool_calls"), (api, "policy", "returned", "stop")
    ]  # fmt: skip
    for call, request in zip(calls, engine.requests, strict=True):
        assert call.prompt_ids == ids(render(request["messages"], request.get("tools")))
    assert calls[0].message["tool_calls"] == ACT["tool_calls"]
    assert calls[0].message["reasoning_content"] == ACT["reasoning_content"]
    traj = Trajectory.from_calls(calls)
    assert traj.broken == [] and traj.exact
    # the engine was offered the tools on both turns, and its second prompt extends the first with the tool outputs
    assert all(r["tools"] == TOOLS for r in engine.requests)
    tool_turns = [m for m in engine.requests[1]["messages"] if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_turns] == list(OUTPUTS.items())


def test_chat_completions_plain_keep_tool_calls_and_reasoning(engine: ScriptedEngine, gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url_for("chat-1"), api_key="x")
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    first = client.chat.completions.create(model="policy", messages=history, tools=TOOLS)
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert [tc.model_dump() for tc in message.tool_calls] == ACT["tool_calls"]
    assert (message.content, message.reasoning_content) == (ACT["content"], ACT["reasoning_content"])
    history.append(message.model_dump(exclude_none=True))
    history += [{"role": "tool", "tool_call_id": k, "content": v} for k, v in OUTPUTS.items()]
    second = client.chat.completions.create(model="policy", messages=history, tools=TOOLS)
    assert second.choices[0].message.content == "Fixed." and not second.choices[0].message.tool_calls
    _assert_recorded_exact(gateway, engine, "chat-1", "chat")


def test_chat_completions_streamed_in_the_standard_chunks(engine: ScriptedEngine, gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url_for("stream-1"), api_key="x")
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    # the SDK's own accumulator: tool-call deltas by index, id and name first, then arguments
    with client.chat.completions.stream(model="policy", messages=history, tools=TOOLS,
                                        stream_options={"include_usage": True}) as stream:  # fmt: skip
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert [tc.model_dump(exclude_none=True, exclude={"index"}) for tc in message.tool_calls] == ACT["tool_calls"]
    assert message.content == ACT["content"] and final.choices[0].finish_reason == "tool_calls"
    assert final.usage is not None and final.usage.completion_tokens == len(ids(body_of(ACT) + "<|end|>"))
    # the raw chunks: role first, the reasoning as its own delta, a usage chunk with no choices last
    kept = [tc.model_dump(exclude_none=True, exclude={"index"}) for tc in message.tool_calls]
    history.append({"role": "assistant", "content": message.content, "reasoning_content": ACT["reasoning_content"],
                    "tool_calls": kept})  # fmt: skip
    history += [{"role": "tool", "tool_call_id": k, "content": v} for k, v in OUTPUTS.items()]
    chunks = list(client.chat.completions.create(model="policy", messages=history, tools=TOOLS, stream=True,
                                                 stream_options={"include_usage": True}))  # fmt: skip
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Fixed."
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == len(ids("Fixed.<|end|>"))
    _assert_recorded_exact(gateway, engine, "stream-1", "chat")


def test_the_reasoning_streams_as_its_own_delta(engine: ScriptedEngine, gateway: Gateway) -> None:
    body = {"model": "policy", "messages": [{"role": "user", "content": TASK}], "tools": TOOLS, "stream": True}
    resp = requests.post(gateway.url_for("raw-1") + "/chat/completions", json=body, timeout=30)
    chunks = [json.loads(line[6:]) for line in resp.text.splitlines() if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert resp.text.rstrip().endswith("data: [DONE]")
    assert {"reasoning_content": ACT["reasoning_content"]} in deltas
    heads = [d["tool_calls"][0] for d in deltas if d.get("tool_calls") and "id" in d["tool_calls"][0]]
    named = [(h["index"], h["id"], h["function"]["name"]) for h in heads]
    assert named == [(0, "call_a1", "bash"), (1, "call_b2", "bash")]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls" and "usage" not in chunks[-1]
    assert chunks[-1]["prompt_token_ids"] == gateway.calls("raw-1")[0].prompt_ids  # the ids, as vLLM streams them


def test_a_query_string_changes_nothing(engine: ScriptedEngine, gateway: Gateway) -> None:
    body = {"model": "policy", "messages": [{"role": "user", "content": TASK}], "tools": TOOLS}
    resp = requests.post(gateway.url_for("query-1") + "/chat/completions?api-version=2024-10-21", json=body, timeout=30)
    assert resp.status_code == 200 and resp.json()["choices"][0]["message"]["tool_calls"] == ACT["tool_calls"]
    assert [c.index for c in gateway.calls("query-1")] == [0]


def test_the_responses_api_is_translated_and_recorded(engine: ScriptedEngine, gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url_for("resp-1"), api_key="x")
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    items: list = [{"role": "user", "content": TASK}]
    first = client.responses.create(model="policy", instructions=SYSTEM, input=items, tools=tools, store=False)
    assert [o.type for o in first.output] == ["reasoning", "message", "function_call", "function_call"]
    calls = [o for o in first.output if o.type == "function_call"]
    assert [(c.call_id, c.name, c.arguments) for c in calls] == [
        (tc["id"], "bash", tc["function"]["arguments"]) for tc in ACT["tool_calls"]]  # fmt: skip
    assert first.output_text == ACT["content"] and first.output[0].content[0].text == ACT["reasoning_content"]
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items += [{"type": "function_call_output", "call_id": k, "output": v} for k, v in OUTPUTS.items()]
    # the second turn streamed, as Codex asks it: the SDK's accumulator rebuilds the response from the events
    with client.responses.stream(model="policy", instructions=SYSTEM, input=items, tools=tools) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert final.output_text == "Fixed." and final.usage.output_tokens == len(ids("Fixed.<|end|>"))
    assert engine.requests[0]["messages"][0] == {"role": "system", "content": SYSTEM}
    _assert_recorded_exact(gateway, engine, "resp-1", "responses")


def test_the_messages_api_is_translated_and_recorded(engine: ScriptedEngine, gateway: Gateway) -> None:
    client = anthropic.Anthropic(base_url=gateway.url_for("msg-1").removesuffix("/v1"), api_key="x")
    tools = [{"name": "bash", "description": "Run a shell command.",
              "input_schema": TOOLS[0]["function"]["parameters"]}]  # fmt: skip
    history: list = [{"role": "user", "content": TASK}]
    # Claude Code's call: the beta client, `/v1/messages?beta=true`
    first = client.beta.messages.create(model="policy", max_tokens=512, system=SYSTEM, messages=history, tools=tools)
    assert [b.type for b in first.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert first.stop_reason == "tool_use" and first.content[0].thinking == ACT["reasoning_content"]
    uses = [b for b in first.content if b.type == "tool_use"]
    assert [(u.id, u.input) for u in uses] == [("call_a1", {"command": "ls"}), ("call_b2", {"command": "cat calc.py"})]
    history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]})
    history.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": k, "content": v}
                                                for k, v in OUTPUTS.items()]})  # fmt: skip
    with client.messages.stream(model="policy", max_tokens=512, system=SYSTEM, messages=history, tools=tools) as s:
        final = s.get_final_message()
    assert [(b.type, b.text) for b in final.content] == [("text", "Fixed.")] and final.stop_reason == "end_turn"
    assert final.usage.output_tokens == len(ids("Fixed.<|end|>"))
    _assert_recorded_exact(gateway, engine, "msg-1", "messages")


def test_side_calls_are_kept_but_not_trained_on() -> None:
    """A call for a side model, or one the client tags `X-Trialbook-Role: side`, is recorded as `side`; the
    trajectory holds the policy's turn alone."""
    with (
        ScriptedEngine([ACT, DONE, DONE]) as engine,
        Gateway(engine.url, engine_kind="vllm", side_models=("helper",)) as gateway,
    ):
        url = gateway.url_for("side-1") + "/chat/completions"
        ask = {"messages": [{"role": "user", "content": TASK}], "tools": TOOLS}
        assert requests.post(url, json={**ask, "model": "helper"}, timeout=30).ok  # a model named a side model
        assert requests.post(url, json={**ask, "model": "policy"}, timeout=30).ok
        side = {"X-Trialbook-Role": "side"}  # the policy's model, but beside the episode (a summary, say)
        assert requests.post(url, json={**ask, "model": "policy"}, headers=side, timeout=30).ok
        bogus = {"X-Trialbook-Role": "bogus"}
        assert requests.post(url, json={**ask, "model": "policy"}, headers=bogus, timeout=30).status_code == 400
        calls = gateway.calls("side-1")
    assert [(c.role, c.model) for c in calls] == [("side", "helper"), ("policy", "policy"), ("side", "policy")]
    traj = Trajectory.from_calls(calls)
    assert len(traj.turns) == 1 and traj.turns[0].completion_ids == calls[1].completion_ids


@pytest.mark.parametrize(("path", "body", "message"), [
    ("/responses", {"model": "p", "input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ("/responses", {"model": "p", "input": [{"type": "image_generation_call"}]}, "image_generation_call"),
    ("/messages", {"model": "p", "max_tokens": 8, "messages": []}, "non-empty messages"),
])  # fmt: skip
def test_requests_the_gateway_cannot_translate_get_one_clear_error(gateway: Gateway, path: str, body: dict,
                                                                    message: str) -> None:  # fmt: skip
    resp = requests.post(gateway.url_for("bad-1") + path, json=body, timeout=30)
    assert resp.status_code == 400 and message in json.dumps(resp.json())
    assert gateway.calls("bad-1") == []


# A Hermes-style template (Qwen2.5's tool form, shortened): what the llama.cpp engines render, the gateway reading
# the tool calls back out of the generated text
HERMES = (
    r"{%- if tools %}{{- '<|im_start|>system\n<tools>' }}{%- for t in tools %}{{- '\n' + (t | tojson) }}{%- endfor %}"
    r"{{- '\n</tools><|im_end|>\n' }}{%- endif %}"
    r"{%- for m in messages %}"
    r"{%- if m.role == 'assistant' %}{{- '<|im_start|>assistant\n' + (m.content or '') }}"
    r"{%- for tc in m.tool_calls or [] %}{%- if m.content or not loop.first %}{{- '\n' }}{%- endif %}"
    r"""{{- '<tool_call>\n{"name": "' + tc.function.name + '", "arguments": ' + (tc.function.arguments | tojson) }}"""
    r"{{- '}\n</tool_call>' }}{%- endfor %}{{- '<|im_end|>\n' }}"
    r"{%- elif m.role == 'tool' %}{{- '<|im_start|>user\n<tool_response>\n' + m.content }}"
    r"{{- '\n</tool_response><|im_end|>\n' }}"
    r"{%- else %}{{- '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{%- endif %}"
    r"{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)


def test_a_text_engines_tool_calls_are_read_back_and_render_the_same_prompt() -> None:
    from trialbook.rl.chat_wire import template_messages, text_message
    from trialbook.rl.engines import _render

    history = [{"role": "user", "content": TASK}]
    prompt = _render(HERMES, template_messages(history), "", "", TOOLS)
    assert '"description": "Run a shell command."' in prompt  # transformers' tojson: no HTML escapes
    call = '<tool_call>\n{{"name": "bash", "arguments": {{"command": "{}"}}}}\n</tool_call>'
    generated = f"<think>Look first.</think>Let me look.\n{call.format('ls')}\n{call.format('cat <calc.py>')}"
    message = text_message(generated, tools_offered=True)
    assert (message["content"], message["reasoning_content"]) == ("Let me look.", "Look first.")
    assert [(tc["function"]["name"], json.loads(tc["function"]["arguments"])) for tc in message["tool_calls"]] == [
        ("bash", {"command": "ls"}), ("bash", {"command": "cat <calc.py>"})]  # fmt: skip
    assert text_message(generated, tools_offered=False) == {"role": "assistant", "content": generated}
    not_json = "<tool_call>not json</tool_call>"
    assert text_message(not_json, True) == {"role": "assistant", "content": not_json}
    # the client sends the message back as it got it: the next prompt is this one plus the generation (its
    # reasoning aside: this template, as Qwen's, drops it from the history)
    history += [{**message, "reasoning_content": None}, {"role": "tool", "tool_call_id": "x", "content": "calc.py"}]
    again = _render(HERMES, template_messages(history), "", "", TOOLS)
    assert again.startswith(prompt + generated.split("</think>")[1] + "<|im_end|>\n")


def test_codex_namespaced_tools_are_flattened_and_hosted_tools_dropped() -> None:
    """Codex CLI 0.171 sends a `namespace` of functions (its sub-agent tools) and `web_search` beside its functions."""
    spawn = {"type": "function", "name": "spawn_agent", "parameters": {"type": "object", "properties": {}}}
    tools = [{"type": "function", **TOOLS[0]["function"]}, {"type": "namespace", "name": "multi_agent_v1",
             "description": "Sub-agents.", "tools": [spawn]}, {"type": "web_search"}]  # fmt: skip
    reply = {"content": None, "tool_calls": [
        {"id": "call_s", "type": "function", "function": {"name": "spawn_agent", "arguments": "{}"}}]}  # fmt: skip
    with ScriptedEngine([reply]) as eng, Gateway(eng.url, engine_kind="vllm") as gw:
        client = openai.OpenAI(base_url=gw.url_for("ns-1"), api_key="x")
        out = client.responses.create(model="policy", input="Go.", tools=tools)
    assert [t["function"]["name"] for t in eng.requests[0]["tools"]] == ["bash", "spawn_agent"]
    (call,) = out.output
    assert (call.type, call.name, call.call_id, call.model_dump().get("namespace")) == (
        "function_call", "spawn_agent", "call_s", "multi_agent_v1")  # fmt: skip


class _UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def test_a_sandboxs_socket_records_its_own_trial_and_nothing_else(engine: ScriptedEngine, tmp_path) -> None:
    """The socket a sandbox reaches the gateway by (rl/cli_agents.py): its calls are its trial's, whatever key they
    name; it cannot take or read the record, nor reach the engine past the recorded routes."""
    sock = str(tmp_path / "gateway.sock")
    with Gateway(engine.url, engine_kind="vllm") as gw:
        gw.start_unix(sock, trial="trial-a")

        def ask(method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
            conn = _UnixHTTP(sock)
            conn.request(method, path, json.dumps(body) if body else None, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            status, data = resp.status, json.loads(resp.read())
            conn.close()
            return status, data

        chat = {"model": "policy", "messages": [{"role": "user", "content": TASK}], "tools": TOOLS}
        status, out = ask("POST", "/t/trial-b/v1/chat/completions", chat)
        assert status == 200 and out["choices"][0]["message"]["tool_calls"] == ACT["tool_calls"]
        assert ask("GET", "/v1/models")[0] == 200  # reads pass through to the engine
        for method, path in (("POST", "/admin/take/trial-a"), ("GET", "/admin/calls/trial-a"),
                             ("POST", "/admin/weight_version"), ("POST", "/v1/completions")):  # fmt: skip
            status, out = ask(method, path, {"version": 9, "prompt": "x"})
            assert status == 403 and "not from a sandbox" in out["error"]["message"], (method, path)
        assert [c.index for c in gw.calls("trial-a")] == [0] and gw.calls("trial-b") == []
        assert gw.weight_version is None and len(engine.requests) == 1
    assert not Path(sock).exists()  # removed when the gateway stops

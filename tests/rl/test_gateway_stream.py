"""A streamed chat completion goes through the gateway as the engine streams it (rl/gateway.py `_chunks`, engines.py
`stream`): the client has the engine's first delta while the engine is still generating (the scripted vLLM-shaped
engine, tests/rl/scripted_engine.py, holds the rest until the test lets it go), the call is recorded with the
engine's ids once the engine is done, a client that hangs up mid-stream does not lose the record, and an engine
that refuses the request is answered before any byte of a stream."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
import requests
from scripted_engine import ScriptedEngine, body_of, ids, render

from trialbook.rl.gateway import Gateway

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
ACT = {
    "reasoning_content": "Look first.",
    "content": "Let me look.",
    "tool_calls": [
        {"id": "call_a1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    ],
}
MESSAGES = [{"role": "user", "content": "Fix calc.py."}]


def _post(gw: Gateway, trial: str) -> requests.Response:
    body = {"model": "policy", "messages": MESSAGES, "tools": TOOLS, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    return requests.post(gw.url_for(trial) + "/chat/completions", json=body, stream=True, timeout=30)


def _events(resp: requests.Response) -> Iterator[dict]:
    for line in resp.iter_lines(chunk_size=None):  # the gateway's stream is chunked: each chunk as it comes
        if line.startswith(b"data: {"):
            yield json.loads(line[6:])


def test_the_first_delta_reaches_the_client_before_the_engine_is_done() -> None:
    gate = threading.Event()
    with ScriptedEngine([ACT], gate=gate) as engine, Gateway(engine.url, engine_kind="vllm") as gw:
        resp = _post(gw, "live-1")
        assert resp.status_code == 200 and resp.headers["Transfer-Encoding"] == "chunked"
        events = _events(resp)
        seen = [next(events), next(events)]  # the role, then the engine's first delta (the reasoning)
        assert seen[1]["choices"][0]["delta"] == {"reasoning_content": "Look first."}
        assert gw.calls("live-1") == []  # the engine has not finished: nothing is recorded yet
        gate.set()
        seen += list(events)
        (call,) = gw.calls("live-1")
    deltas = [c["choices"][0]["delta"] for c in seen if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == ACT["content"]
    heads = [d["tool_calls"][0] for d in deltas if d.get("tool_calls") and d["tool_calls"][0].get("id")]
    args = "".join(d["tool_calls"][0]["function"].get("arguments") or "" for d in deltas if d.get("tool_calls"))
    assert [(h["id"], h["function"]["name"]) for h in heads] == [("call_a1", "bash")] and args == '{"command": "ls"}'
    last, usage = seen[-2], seen[-1]
    assert last["choices"][0]["finish_reason"] == "tool_calls" and usage["choices"] == []
    # recorded with the engine's own ids, streamed piece by piece, and the closing chunk carries them
    assert call.completion_ids == ids(body_of({"role": "assistant", **ACT}) + "<|end|>")
    assert call.prompt_ids == ids(render(MESSAGES, TOOLS)) == last["prompt_token_ids"]
    assert last["choices"][0]["token_ids"] == call.completion_ids and call.source == "returned"
    assert call.message["tool_calls"] == ACT["tool_calls"] and call.message["reasoning_content"] == "Look first."
    assert usage["usage"]["completion_tokens"] == len(call.completion_ids)


def test_a_client_that_hangs_up_mid_stream_leaves_the_call_recorded() -> None:
    gate = threading.Event()
    with ScriptedEngine([ACT], gate=gate) as engine, Gateway(engine.url, engine_kind="vllm") as gw:
        resp = _post(gw, "gone-1")
        events = _events(resp)
        next(events), next(events)
        resp.close()
        gate.set()
        deadline = time.monotonic() + 10
        while not gw.calls("gone-1") and time.monotonic() < deadline:
            time.sleep(0.05)
        (call,) = gw.calls("gone-1")
    assert call.completion_ids == ids(body_of({"role": "assistant", **ACT}) + "<|end|>")


def test_an_engine_that_refuses_is_answered_before_any_stream() -> None:
    with ScriptedEngine([]) as engine, Gateway(engine.url, engine_kind="vllm") as gw:
        resp = _post(gw, "refused-1")
        assert resp.status_code == 500 and "no more replies" in resp.text
        assert gw.calls("refused-1") == []


@pytest.mark.parametrize(
    ("path", "body", "first", "last"),
    [
        ("/responses", {"input": "Fix calc.py.", "tools": [{"type": "function", "name": "bash", "parameters": {}}]},
         "response.reasoning_text.delta", "response.completed"),
        ("/messages", {"max_tokens": 64, "messages": MESSAGES, "tools": [{"name": "bash", "input_schema": {}}]},
         "content_block_delta", "message_stop"),
    ],
)  # fmt: skip
def test_the_responses_and_messages_apis_stream_as_the_engine_does(
    path: str, body: dict, first: str, last: str
) -> None:
    gate = threading.Event()
    with ScriptedEngine([ACT], gate=gate) as engine, Gateway(engine.url, engine_kind="vllm") as gw:
        resp = requests.post(gw.url_for("api-1") + path, json={"model": "policy", "stream": True, **body}, stream=True,
                             timeout=30)  # fmt: skip
        events = _events(resp)
        seen = []
        while not seen or seen[-1]["type"] != first:
            seen.append(next(events))
        assert gw.calls("api-1") == []  # the reasoning is out; the engine has not finished
        gate.set()
        seen += list(events)
        (call,) = gw.calls("api-1")
    assert seen[-1]["type"] == last and call.completion_ids == ids(body_of({"role": "assistant", **ACT}) + "<|end|>")
    text = json.dumps(seen)
    assert all(part in text for part in ("Look first.", "Let me look.", "call_a1", '{\\"command\\": \\"ls\\"}'))

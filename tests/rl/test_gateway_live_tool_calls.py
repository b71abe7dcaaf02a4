"""A real engine's tool calls through the gateway: llama-cpp-python with SmolLM2-135M (the CI's model part) behind the
gateway with a ChatML template that renders tools (rl/hermes.py: CHATML_TOOLS, as Qwen2.5's); each request forces
a call of the `bash` tool (`tool_choice`), so the engine generates under the gateway's grammar of the Hermes form and
a tool call comes back for real, not scripted. The unmodified OpenAI SDK (chat completions, plain and streamed; the
Responses API, streamed as Codex asks it) and Anthropic SDK (Messages) each get the call; each call is recorded with
the engine's own ids, the same ids for the same prompt whichever API asked, and a streamed reply is passed on as
the engine streams it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import anthropic
import openai
import pytest
import requests

from trialbook.agents.llama import LlamaServer, model_file
from trialbook.rl.gateway import Call, Gateway, template_of
from trialbook.rl.hermes import with_tools
from trialbook.trajectory import Trajectory

pytestmark = [pytest.mark.llm]

PARAMS = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": PARAMS}}]
FORCE = {"type": "function", "function": {"name": "bash"}}
TASK = "Run ls to list the files."
ASK = {"model": "smollm2-135m-instruct", "temperature": 0, "max_tokens": 64}


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(llama: LlamaServer) -> Iterator[Gateway]:
    with Gateway(llama.url, chat_template=with_tools(template_of(model_file()))) as gw:
        yield gw


@pytest.fixture(scope="module")
def first(gateway: Gateway) -> tuple[openai.types.chat.ChatCompletion, Call]:
    """Turn 1 in chat completions, plain: the engine's forced tool call."""
    client = openai.OpenAI(base_url=gateway.url_for("chat-1"), api_key="x")
    reply = client.chat.completions.create(messages=[{"role": "user", "content": TASK}], tools=TOOLS, tool_choice=FORCE,
                                           **ASK)  # fmt: skip
    return reply, gateway.calls("chat-1")[0]


def _text(llama: LlamaServer, ids: list[int]) -> str:
    """The engine's text of ids (its special tokens, such as <|im_end|>, left out)."""
    resp = requests.post(llama.url.removesuffix("/v1") + "/extras/detokenize", json={"tokens": ids}, timeout=60)
    return resp.json()["text"]


def _ids(llama: LlamaServer, text: str) -> list[int]:
    """The engine's tokenization of a text alone (what it puts before any text left out)."""
    url = llama.url.removesuffix("/v1") + "/extras/tokenize"
    lead, ids = (requests.post(url, json={"input": t}, timeout=60).json()["tokens"] for t in ("", text))
    return ids[len(lead) :]


def test_chat_completions_get_the_engines_tool_call_and_its_ids(llama: LlamaServer, gateway: Gateway, first) -> None:
    reply, call = first
    (tc,) = reply.choices[0].message.tool_calls
    args = json.loads(tc.function.arguments)
    assert reply.choices[0].finish_reason == "tool_calls" and tc.function.name == "bash"
    assert list(args) == ["command"] and args["command"]
    # recorded as the engine generated it: its ids are the Hermes call the client got, then the end-of-turn token
    assert (call.source, call.finish_reason, call.api) == ("engine-tokenizer", "tool_calls", "chat")
    assert call.message["tool_calls"] == [tc.model_dump(exclude_none=True)]
    hermes = f'<tool_call>\n{{"name": "bash", "arguments": {tc.function.arguments}}}\n</tool_call>'
    assert _text(llama, call.completion_ids) == hermes and call.completion_ids[-1:] == _ids(llama, "<|im_end|>")
    assert len(call.logprobs) == len(call.completion_ids) and call.logprobs[0] is not None

    # the same request streamed: the SDK's accumulator rebuilds the same call, the engine gave the same ids
    client = openai.OpenAI(base_url=gateway.url_for("chat-2"), api_key="x")
    with client.chat.completions.stream(messages=[{"role": "user", "content": TASK}], tools=TOOLS, tool_choice=FORCE,
                                        stream_options={"include_usage": True}, **ASK) as stream:  # fmt: skip
        final = stream.get_final_completion()
    (streamed,) = final.choices[0].message.tool_calls
    assert (streamed.function.name, streamed.function.arguments) == (tc.function.name, tc.function.arguments)
    (again,) = gateway.calls("chat-2")
    assert (again.prompt_ids, again.completion_ids) == (call.prompt_ids, call.completion_ids)
    assert final.usage.completion_tokens == len(call.completion_ids)

    # turn 2: the tool's output goes back; the engine answers in text, recorded exact
    history = [{"role": "user", "content": TASK}, reply.choices[0].message.model_dump(exclude_none=True),
               {"role": "tool", "tool_call_id": tc.id, "content": "calc.py\nREADME.md"}]  # fmt: skip
    turn1 = openai.OpenAI(base_url=gateway.url_for("chat-1"), api_key="x")
    second = turn1.chat.completions.create(messages=history, tools=TOOLS, **{**ASK, "max_tokens": 24})
    calls = gateway.calls("chat-1")
    assert [c.index for c in calls] == [0, 1] and calls[1].source == "engine-tokenizer"
    assert second.choices[0].message.content == calls[1].message.get("content")
    # the second prompt's text extends the first turn's text exactly (the template renders the call back as the
    # grammar made it); its ids do too unless the model split a piece of the call otherwise than the engine's
    # tokenizer does (a grammar leaves the split to the model): the audit then says so
    assert _text(llama, calls[1].prompt_ids).startswith(_text(llama, call.prompt_ids + call.completion_ids))
    canonical = _ids(llama, hermes) == call.completion_ids[:-1]
    traj = Trajectory.from_calls(calls)
    assert traj.exact and traj.broken == ([] if canonical else [1])


def test_the_responses_and_messages_apis_get_the_same_tool_call(llama: LlamaServer, gateway: Gateway, first) -> None:
    reply, call = first
    (tc,) = reply.choices[0].message.tool_calls
    client = openai.OpenAI(base_url=gateway.url_for("resp-1"), api_key="x")
    tool = {"type": "function", "name": "bash", "parameters": PARAMS}
    with client.responses.stream(model=ASK["model"], input=TASK, tools=[tool], tool_choice={"type": "function",
                                 "name": "bash"}, temperature=0, max_output_tokens=64) as stream:  # fmt: skip
        kinds = [event.type for event in stream]
        response = stream.get_final_response()
    (item,) = response.output
    assert (item.type, item.name, item.arguments) == ("function_call", "bash", tc.function.arguments)
    assert "response.function_call_arguments.delta" in kinds and kinds[-1] == "response.completed"

    messages = anthropic.Anthropic(base_url=gateway.url_for("msg-1").removesuffix("/v1"), api_key="x")
    message = messages.messages.create(model=ASK["model"], max_tokens=64, messages=[{"role": "user", "content": TASK}],
                                       tools=[{"name": "bash", "input_schema": PARAMS}],
                                       tool_choice={"type": "tool", "name": "bash"},
                                       extra_body={"temperature": 0})  # fmt: skip
    (block,) = message.content
    assert (block.type, block.name, block.input) == ("tool_use", "bash", json.loads(tc.function.arguments))
    assert message.stop_reason == "tool_use"
    # the same prompt whichever API asked, so the same ids: each recorded under its own API
    for trial, api in (("resp-1", "responses"), ("msg-1", "messages")):
        (rec,) = gateway.calls(trial)
        assert (rec.api, rec.source, rec.finish_reason) == (api, "engine-tokenizer", "tool_calls")
        assert (rec.prompt_ids, rec.completion_ids) == (call.prompt_ids, call.completion_ids)


def test_a_streamed_reply_reaches_the_client_while_the_engine_generates(gateway: Gateway) -> None:
    client = openai.OpenAI(base_url=gateway.url_for("live-1"), api_key="x")
    chunks = client.chat.completions.create(messages=[{"role": "user", "content": "Write a short poem."}],
                                            stream=True, **{**ASK, "max_tokens": 48})  # fmt: skip
    pieces, recorded_at_first = [], None
    started = time.monotonic()
    for chunk in chunks:
        if chunk.choices and chunk.choices[0].delta.content:
            if recorded_at_first is None:
                recorded_at_first = (len(gateway.calls("live-1")), time.monotonic() - started)
            pieces.append(chunk.choices[0].delta.content)
    (call,) = gateway.calls("live-1")
    # the first words came while the engine was still generating (nothing recorded yet), one delta per token
    assert recorded_at_first is not None and recorded_at_first[0] == 0, recorded_at_first
    assert "".join(pieces) == call.text and len(pieces) > 1
    assert call.source == "engine-tokenizer" and len(call.completion_ids) >= len(pieces)

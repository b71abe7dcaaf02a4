"""OpenAI chat completions on the gateway's wire: the assistant message a reply carries (content, tool calls,
reasoning), the same reply as the standard stream of chunks, and for engines whose reply is text (the llama.cpp
ones) the history a chat template is given and the tool calls read back from the generated text.

A stream is a first chunk with the role, then the deltas as the engine streams them (an engine that streams,
rl/engines.py: its reasoning, content and tool-call deltas passed on as they come; MessageBuilder puts them back
together for the record; HeldText holds back a text engine's text that may turn out to be a tool call), a chunk with
the finish reason (carrying the gateway's `token_ids` / `prompt_token_ids` / `weight_version`, as vLLM's last chunk
does), and a usage chunk with empty choices when the request asked `stream_options.include_usage`. For an engine
that streams nothing the deltas are made from the whole reply: the reasoning, the content, each tool call (its index,
id, type and name, then its arguments).
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

REASONING_KEYS = ("reasoning_content", "reasoning")  # vLLM < 0.10 and SGLang / vLLM >= 0.10
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_THINK = re.compile(r"^\s*<think>(.*?)</think>\s*", re.S)


def reasoning_of(message: dict[str, Any]) -> str:
    for key in REASONING_KEYS:
        if message.get(key):
            return str(message[key])
    return ""


def text_of(content: Any) -> str:
    """A message's content as text: a string as is, a list of parts as its text parts joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as a Hugging Face chat template takes it (as vLLM gives it to one): text content, and the
    assistant's tool calls with their arguments as objects; tool results keep their id and name."""
    out = []
    for m in messages:
        row: dict[str, Any] = {"role": m["role"], "content": text_of(m.get("content"))}
        for key in ("name", "tool_call_id", *REASONING_KEYS):
            if m.get(key) is not None:
                row[key] = m[key]
        if m.get("tool_calls"):
            row["tool_calls"] = [
                {**tc, "function": {**tc["function"], "arguments": _arguments(tc["function"].get("arguments"))}}
                if isinstance(tc.get("function"), dict) else tc
                for tc in m["tool_calls"]
            ]  # fmt: skip
        out.append(row)
    return out


def parse_tool_calls(text: str) -> tuple[str, str, list[dict[str, Any]]]:
    """(content, reasoning, tool calls) of a generated text in the Hermes form (Qwen, Hermes, SmolLM3...): each
    `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` becomes an OpenAI tool call; a block that is not
    such JSON stays in the content. A leading `<think>...</think>` is the reasoning."""
    reasoning = ""
    m = _THINK.match(text)
    if m:
        reasoning, text = m.group(1).strip(), text[m.end() :]
    calls: list[dict[str, Any]] = []
    kept: list[str] = []
    pos = 0
    for block in _TOOL_CALL.finditer(text):
        try:
            obj = json.loads(block.group(1))
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        kept.append(text[pos : block.start()])
        pos = block.end()
        calls.append({"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function",
                      "function": {"name": obj["name"], "arguments": args if isinstance(args, str)
                                   else json.dumps(args, ensure_ascii=False)}})  # fmt: skip
    kept.append(text[pos:])
    content = "".join(kept) if calls else text
    return (content.strip() if calls else content), reasoning, calls


def text_message(text: str, tools_offered: bool) -> dict[str, Any]:
    """The assistant message of a text reply: tool calls (and reasoning) read out only when tools were offered."""
    if not tools_offered:
        return {"role": "assistant", "content": text}
    content, reasoning, calls = parse_tool_calls(text)
    message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else "")}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls:
        message["tool_calls"] = calls
    return message


def _chunk(out: dict[str, Any], delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish, **extra}
    return {"id": out["id"], "object": "chat.completion.chunk", "created": out["created"], "model": out["model"],
            "choices": [choice]}  # fmt: skip


def tool_call_deltas(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each tool call as two deltas: its index, id, type and name, then its arguments."""
    deltas = []
    for i, tc in enumerate(calls):
        fn = tc.get("function") or {}
        head = {"index": i, "id": tc.get("id"), "type": tc.get("type", "function"),
                "function": {"name": fn.get("name"), "arguments": ""}}  # fmt: skip
        deltas += [
            {"tool_calls": [head]},
            {"tool_calls": [{"index": i, "function": {"arguments": fn.get("arguments", "")}}]},
        ]
    return deltas


def message_deltas(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole assistant message as the deltas a stream carries: the reasoning, the content, the tool calls."""
    deltas = [{key: message[key]} for key in REASONING_KEYS if message.get(key)]
    if message.get("content"):
        deltas.append({"content": message["content"]})
    return deltas + tool_call_deltas(message.get("tool_calls") or [])


def head_chunk(out: dict[str, Any]) -> dict[str, Any]:
    return _chunk(out, {"role": "assistant", "content": ""})


def delta_chunk(out: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    return _chunk(out, delta)


def closing_chunks(out: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The chunk with the finish reason (and the gateway's `token_ids` / `prompt_token_ids` / `weight_version`,
    as vLLM's last chunk carries them), then the usage chunk with empty choices when it was asked for."""
    choice = out["choices"][0]
    last = _chunk(out, {}, choice["finish_reason"], token_ids=choice.get("token_ids"))
    last["prompt_token_ids"] = out.get("prompt_token_ids")
    last["weight_version"] = out.get("weight_version")
    return [last, {**_chunk(out, {}), "choices": [], "usage": out["usage"]}] if include_usage else [last]


class ChatStream:
    """A streamed chat completion, event by event as the engine's deltas come (the gateway's `_stream`): `start`,
    `add` per delta, `finish` with the recorded reply; `encode` makes the bytes, `tail` ends the stream. The
    Responses and Messages APIs have their own (responses_api.ResponseStream, messages_api.MessageStream)."""

    tail = b"data: [DONE]\n\n"

    def __init__(self, body: dict[str, Any], rid: str, created: int) -> None:
        self.head = {"id": rid, "created": created, "model": body.get("model") or ""}
        self.usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def start(self) -> list[dict[str, Any]]:
        return [head_chunk(self.head)]

    def add(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        return [delta_chunk(self.head, delta)]

    def finish(self, out: dict[str, Any]) -> list[dict[str, Any]]:
        return closing_chunks({**out, "id": self.head["id"], "created": self.head["created"]}, self.usage)

    def encode(self, events: list[dict[str, Any]]) -> bytes:
        return sse(events, done=False)


class MessageBuilder:
    """A streamed reply's deltas put back together into the message a plain reply carries."""

    def __init__(self) -> None:
        self.parts: dict[str, list[str]] = {}
        self.calls: dict[int, dict[str, Any]] = {}

    def add(self, delta: dict[str, Any]) -> None:
        for key in ("content", *REASONING_KEYS):
            if delta.get(key):
                self.parts.setdefault(key, []).append(str(delta[key]))
        for tc in delta.get("tool_calls") or []:
            blank = {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            call = self.calls.setdefault(int(tc.get("index") or 0), blank)
            for key in ("id", "type"):
                if tc.get(key):
                    call[key] = tc[key]
            fn = tc.get("function") or {}
            call["function"]["name"] += fn.get("name") or ""
            call["function"]["arguments"] += fn.get("arguments") or ""

    def message(self) -> dict[str, Any]:
        content = "".join(self.parts.get("content", []))
        message: dict[str, Any] = {"role": "assistant", "content": content or (None if self.calls else "")}
        for key in REASONING_KEYS:
            if key in self.parts:
                message[key] = "".join(self.parts[key])
        if self.calls:
            message["tool_calls"] = [self.calls[i] for i in sorted(self.calls)]
        return message


class HeldText:
    """A text engine's reply, streamed as content while it is generated. Where tools were offered, text goes out only
    while it cannot turn out to be a tool call or reasoning (before any `<`, no trailing whitespace, not after leading
    whitespace) and is thus a prefix of the content read from the whole reply (text_message); the rest, and the tool
    calls, go out once the reply is whole. A forced tool call (a grammar) is held whole."""

    def __init__(self, tools_offered: bool, hold_all: bool = False) -> None:
        self.tools, self.hold_all = tools_offered, hold_all
        self.text, self.sent = "", 0

    def add(self, piece: str) -> list[dict[str, Any]]:
        self.text += piece
        if not self.tools:
            self.sent = len(self.text)
            return [{"content": piece}] if piece else []
        if self.hold_all or not self.text or self.text[0].isspace():
            return []
        cut = self.text.find("<")
        safe = len((self.text if cut < 0 else self.text[:cut]).rstrip())
        if safe <= self.sent:
            return []
        delta, self.sent = self.text[self.sent : safe], safe
        return [{"content": delta}]

    def finish(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The deltas still owed once the whole reply is `message` (what text_message read from it)."""
        content = message.get("content") or ""
        rest = dict(message)
        rest["content"] = content[self.sent :] if content.startswith(self.text[: self.sent]) else content
        return message_deltas(rest)


def sse(events: list[dict[str, Any]], done: bool = True, named: bool = False) -> bytes:
    """Server-sent events: `data: {json}` per event (with `event: <type>` first when `named`), then `[DONE]`."""
    parts = []
    for e in events:
        head = f"event: {e['type']}\n" if named else ""
        parts.append(f"{head}data: {json.dumps(e, ensure_ascii=False)}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()

"""Anthropic's Messages API (`POST /v1/messages`, Claude Code's `?beta=true` included) on the gateway: the request is
translated to a chat completion for the engine, the engine's message back to an Anthropic message (a `thinking`
block for the reasoning, a `text` block, one `tool_use` block per tool call), plain or as the stream of events the
Anthropic SDK reads (`message_start` ... `message_stop`), made by MessageStream as the engine streams its
reply.

One history sent back unchanged renders the same prompt: an assistant message's thinking, text and tool_use blocks
become one chat message (reasoning_content, content, tool_calls), a user message's `tool_result` blocks `tool`
messages (before the user's own text, as they answer the turn before it).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from trialbook.errors import UserError
from trialbook.rl.chat_wire import reasoning_of, sse, text_of

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use"}


def _text(content: Any) -> str:
    """A content that is a string or a list of blocks, as text (text blocks joined)."""
    if isinstance(content, list):
        return "".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return text_of(content)


def _tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        if "input_schema" not in t:  # a server tool (web search, code execution...): the engine runs none of them
            continue
        fn = {"name": t["name"], "parameters": t["input_schema"]}
        if t.get("description"):
            fn["description"] = t["description"]
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(choice: dict[str, Any]) -> Any:
    kind = choice.get("type")
    if kind == "tool":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return {"any": "required", "none": "none"}.get(str(kind), "auto")


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    texts, reasoning, calls = [], [], []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text") or ""))
        elif kind == "thinking":
            reasoning.append(str(b.get("thinking") or ""))
        elif kind == "tool_use":
            fn = {"name": b.get("name"), "arguments": json.dumps(b.get("input") or {})}
            calls.append({"id": b.get("id"), "type": "function", "function": fn})
        elif kind != "redacted_thinking":
            raise UserError(f"the gateway's Messages API does not take assistant blocks of type {kind!r}")
    if texts or not calls:
        message["content"] = "".join(texts)
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = calls
    return message


def _user(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out, texts = [], []
    for b in blocks:
        kind = b.get("type")
        if kind == "tool_result":
            out.append({"role": "tool", "tool_call_id": b.get("tool_use_id"), "content": _text(b.get("content"))})
        elif kind == "text":
            texts.append(str(b.get("text") or ""))
        else:
            raise UserError(f"the gateway's Messages API does not take user blocks of type {kind!r}")
    if texts or not out:
        out.append({"role": "user", "content": "".join(texts)})
    return out


def messages_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic Messages request as the chat completion the engine is asked."""
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise UserError("a message request needs a non-empty messages list")
    messages: list[dict[str, Any]] = []
    if body.get("system"):
        messages.append({"role": "system", "content": _text(body["system"])})
    for m in body["messages"]:
        content = m.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]
        if m.get("role") == "assistant":
            messages.append(_assistant(blocks))
        else:
            messages += _user(blocks)
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = _tools(body.get("tools") or [])
    if tools:
        chat["tools"] = tools
        if isinstance(body.get("tool_choice"), dict):
            chat["tool_choice"] = _tool_choice(body["tool_choice"])
    for src, dst in (("max_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"),
                     ("stop_sequences", "stop")):  # fmt: skip
        if body.get(src) is not None:
            chat[dst] = body[src]
    return chat


def _input(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments or "{}")
        except ValueError:
            return {"arguments": arguments}  # not JSON: kept whole rather than lost
    return arguments or {}


def message_from_chat(out: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The gateway's chat completion as an Anthropic message."""
    choice = out["choices"][0]
    message = choice["message"]
    blocks: list[dict[str, Any]] = []
    reasoning = reasoning_of(message)
    if reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    text = text_of(message.get("content"))
    if text or not message.get("tool_calls"):
        blocks.append({"type": "text", "text": text})
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function") or {}
        blocks.append({"type": "tool_use", "id": tc.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                       "name": fn.get("name"), "input": _input(fn.get("arguments"))})  # fmt: skip
    usage = out["usage"]
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": out["model"],
        "content": blocks, "stop_reason": STOP_REASONS.get(str(choice.get("finish_reason")), "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }  # fmt: skip


def _block_events(i: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    kind = block["type"]
    start: dict[str, Any]
    delta: dict[str, Any]
    if kind == "text":
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        delta = {"type": "thinking_delta", "thinking": block["thinking"]}
    else:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"], ensure_ascii=False)}
    return [
        {"type": "content_block_start", "index": i, "content_block": start},
        {"type": "content_block_delta", "index": i, "delta": delta},
        {"type": "content_block_stop", "index": i},
    ]


class MessageStream:
    """A streamed message, event by event as the engine's chat deltas come (the gateway's `_stream`): a content
    block (thinking, text, each tool_use) started at its first delta, its deltas sent on, stopped when the next
    starts or the reply is whole; the stop reason and the token counts in `message_delta` at the end."""

    tail = b""

    def __init__(self, body: dict[str, Any], rid: str, created: int) -> None:
        self.body = body
        self.mid = f"msg_{uuid.uuid4().hex[:24]}"
        self.kinds: list[str] = []  # each block's type, in order
        self.open = False
        self.calls: dict[int, int] = {}  # a tool call's index -> its block's index

    def start(self) -> list[dict[str, Any]]:
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        start: dict[str, Any] = {
            "id": self.mid, "type": "message", "role": "assistant", "model": self.body.get("model") or "",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage,
        }  # fmt: skip
        return [{"type": "message_start", "message": start}]

    def _start(self, block: dict[str, Any]) -> list[dict[str, Any]]:
        evs = self._stop()
        self.kinds.append(block["type"])
        self.open = True
        return [*evs, {"type": "content_block_start", "index": len(self.kinds) - 1, "content_block": block}]

    def _stop(self) -> list[dict[str, Any]]:
        if not self.open:
            return []
        self.open = False
        return [{"type": "content_block_stop", "index": len(self.kinds) - 1}]

    def _delta(self, index: int, delta: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": delta}

    def add(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        evs: list[dict[str, Any]] = []
        last = self.kinds[-1] if self.open else None
        reasoning = reasoning_of(delta)
        if reasoning:
            if last != "thinking":
                evs += self._start({"type": "thinking", "thinking": "", "signature": ""})
            evs.append(self._delta(len(self.kinds) - 1, {"type": "thinking_delta", "thinking": reasoning}))
        if delta.get("content"):
            if last != "text":
                evs += self._start({"type": "text", "text": ""})
            evs.append(self._delta(len(self.kinds) - 1, {"type": "text_delta", "text": delta["content"]}))
        for tc in delta.get("tool_calls") or []:
            index, fn = int(tc.get("index") or 0), tc.get("function") or {}
            if index not in self.calls:
                block: dict[str, Any] = {"type": "tool_use", "id": tc.get("id") or f"toolu_{uuid.uuid4().hex[:24]}",
                         "name": fn.get("name") or "", "input": {}}  # fmt: skip
                evs += self._start(block)
                self.calls[index] = len(self.kinds) - 1
            if fn.get("arguments"):
                evs.append(
                    self._delta(self.calls[index], {"type": "input_json_delta", "partial_json": fn["arguments"]})
                )
        return evs

    def finish(self, out: dict[str, Any]) -> list[dict[str, Any]]:
        evs = self._stop()
        message = message_from_chat(out, self.body)
        streamed = {kind: self.kinds.count(kind) for kind in ("thinking", "text", "tool_use")}
        for block in message["content"]:  # what the whole reply has that no delta started (an empty text)
            if streamed.get(block["type"], 0) > 0:
                streamed[block["type"]] -= 1
                continue
            evs += _block_events(len(self.kinds), block)
            self.kinds.append(block["type"])
        usage = message["usage"]
        return [*evs, {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                       "usage": {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}},
                {"type": "message_stop"}]  # fmt: skip

    def encode(self, events: list[dict[str, Any]]) -> bytes:
        return sse(events, done=False, named=True)

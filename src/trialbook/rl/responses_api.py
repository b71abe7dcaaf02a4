"""OpenAI's Responses API (`POST /v1/responses`, the only one Codex CLI speaks) on the gateway: the request is
translated to a chat completion for the engine (as NeMo Gym does), the engine's message back to a response
(a `reasoning` item, a `message` item, one `function_call` item per tool call), plain or as the stream of named
events the OpenAI SDK and Codex read (`response.created` ... `response.completed`), made by ResponseStream as the engine
streams its reply.

The translation is made so that a history sent back unchanged renders the same prompt: the items of one assistant
turn (reasoning, message, function calls) become one chat message again, each `function_call_output` a `tool`
message. Stateless only: `previous_response_id` (server-kept history) is refused with a clear error. Tools: function
tools, and Codex's `namespace` groups flattened into their functions (a call names its namespace again); hosted
tools (web_search, file_search, ...) are dropped, as the engine runs none of them.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from trialbook.errors import UserError
from trialbook.rl.chat_wire import reasoning_of, sse, text_of


def _tools(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Function tools as chat tools; a `namespace` (Codex's groups of tools) is flattened into its functions;
    hosted tools (web_search, file_search, ...) are dropped: the engine runs none of them."""
    out = []
    for t in tools:
        if t.get("type") == "namespace":
            out += _tools(t.get("tools") or [])
        elif t.get("type") == "function":
            fn = {k: t[k] for k in ("name", "description", "parameters", "strict") if t.get(k) is not None}
            out.append({"type": "function", "function": fn})
    return out


def _namespaces(tools: list[dict[str, Any]]) -> dict[str, str]:
    """Which namespace each namespaced function is in (its calls name it, as Codex expects)."""
    return {f["name"]: t["name"] for t in tools if t.get("type") == "namespace" for f in t.get("tools") or []}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict) and choice.get("type") == "function":
        return {"type": "function", "function": {"name": choice.get("name")}}
    return choice


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = [*(item.get("content") or []), *(item.get("summary") or [])]
    return "".join(str(p.get("text") or "") for p in parts if isinstance(p, dict))


def responses_to_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses request as the chat completion the engine is asked."""
    if body.get("previous_response_id"):
        raise UserError("previous_response_id: the gateway keeps no responses; send the whole input (store=false)")
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": str(body["instructions"])})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    if not isinstance(items, list):
        raise UserError("a response needs an input: a string or a list of items")
    reasoning = ""
    for item in items:
        kind = item.get("type") or ("message" if "role" in item else None)
        last = messages[-1] if messages else None
        open_turn = last is not None and last["role"] == "assistant"
        if kind == "reasoning":
            reasoning += _reasoning_text(item)
        elif kind == "message" and item.get("role") == "assistant":
            text = text_of(item.get("content"))
            if open_turn and last is not None and not last.get("tool_calls") and not last.get("content"):
                last["content"] = text
            else:
                messages.append({"role": "assistant", "content": text})
            if reasoning:
                messages[-1]["reasoning_content"], reasoning = reasoning, ""
        elif kind == "message":
            role = "system" if item.get("role") == "developer" else item.get("role")
            messages.append({"role": role, "content": text_of(item.get("content"))})
        elif kind == "function_call":
            if not open_turn:
                messages.append({"role": "assistant", "content": None})
            if reasoning:
                messages[-1]["reasoning_content"], reasoning = reasoning, ""
            messages[-1].setdefault("tool_calls", []).append(
                {"id": item.get("call_id"), "type": "function",
                 "function": {"name": item.get("name"), "arguments": item.get("arguments") or ""}}
            )  # fmt: skip
        elif kind == "function_call_output":
            output = item.get("output")
            content = output if isinstance(output, str) else text_of(output)
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": content})
        else:
            raise UserError(f"the gateway's Responses API does not take input items of type {kind!r}")
    chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
    tools = _tools(body.get("tools") or [])
    if tools:
        chat["tools"] = tools
    for src, dst in (("max_output_tokens", "max_tokens"), ("temperature", "temperature"), ("top_p", "top_p"),
                     ("parallel_tool_calls", "parallel_tool_calls"), ("seed", "seed")):  # fmt: skip
        if body.get(src) is not None:
            chat[dst] = body[src]
    if body.get("tool_choice") is not None:
        chat["tool_choice"] = _tool_choice(body["tool_choice"])
    return chat


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


def response_from_chat(out: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The gateway's chat completion as a response object."""
    choice = out["choices"][0]
    message = choice["message"]
    output: list[dict[str, Any]] = []
    reasoning = reasoning_of(message)
    if reasoning:
        output.append({"type": "reasoning", "id": _id("rs"), "summary": [], "status": "completed",
                       "content": [{"type": "reasoning_text", "text": reasoning}]})  # fmt: skip
    text = text_of(message.get("content"))
    if text or not message.get("tool_calls"):
        part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
        msg = {"type": "message", "id": _id("msg"), "role": "assistant", "status": "completed", "content": [part]}
        output.append(msg)
    spaces = _namespaces(body.get("tools") or [])
    for tc in message.get("tool_calls") or []:
        fn = tc.get("function") or {}
        args = fn.get("arguments")
        item = {"type": "function_call", "id": _id("fc"), "call_id": tc.get("id") or _id("call"),
                "name": fn.get("name"), "status": "completed",
                "arguments": args if isinstance(args, str) else json.dumps(args)}  # fmt: skip
        if fn.get("name") in spaces:
            item["namespace"] = spaces[fn["name"]]
        output.append(item)
    usage = out["usage"]
    incomplete = choice.get("finish_reason") == "length"
    return {
        "id": _id("resp"), "object": "response", "created_at": out.get("created") or int(time.time()),
        "status": "incomplete" if incomplete else "completed", "model": out["model"], "output": output,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None, "error": None,
        "instructions": body.get("instructions"), "metadata": body.get("metadata") or {},
        "parallel_tool_calls": body.get("parallel_tool_calls", True), "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [], "temperature": body.get("temperature"), "top_p": body.get("top_p"),
        "max_output_tokens": body.get("max_output_tokens"), "previous_response_id": None, "reasoning": None,
        "text": {"format": {"type": "text"}}, "truncation": "disabled",
        "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"],
                  "total_tokens": usage["total_tokens"], "input_tokens_details": {"cached_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    }  # fmt: skip


def _item_events(i: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    ref = {"item_id": item["id"], "output_index": i}
    if item["type"] == "message":
        part = item["content"][0]
        text = part["text"]
        return [
            {"type": "response.output_item.added", "output_index": i,
             "item": {**item, "status": "in_progress", "content": []}},
            {"type": "response.content_part.added", **ref, "content_index": 0, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **ref, "content_index": 0, "delta": text, "logprobs": []},
            {"type": "response.output_text.done", **ref, "content_index": 0, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **ref, "content_index": 0, "part": part},
        ]  # fmt: skip
    if item["type"] == "function_call":
        return [
            {"type": "response.output_item.added", "output_index": i,
             "item": {**item, "status": "in_progress", "arguments": ""}},
            {"type": "response.function_call_arguments.delta", **ref, "delta": item["arguments"]},
            {"type": "response.function_call_arguments.done", **ref, "arguments": item["arguments"],
             "name": item["name"]},
        ]  # fmt: skip
    text = item["content"][0]["text"]
    return [
        {"type": "response.output_item.added", "output_index": i, "item": {**item, "content": []}},
        {"type": "response.reasoning_text.delta", **ref, "content_index": 0, "delta": text},
        {"type": "response.reasoning_text.done", **ref, "content_index": 0, "text": text},
    ]


class ResponseStream:
    """A streamed response, event by event as the engine's chat deltas come (the gateway's `_stream`): each output
    item (the reasoning, the message's text, each function call) opened at its first delta, its deltas sent on,
    closed when the next opens or the reply is whole; the completed response keeps the streamed items."""

    tail = b""

    def __init__(self, body: dict[str, Any], rid: str, created: int) -> None:
        self.body, self.created = body, created
        self.rid = _id("resp")
        self.items: list[dict[str, Any]] = []  # as streamed, in order; the last one may be open
        self.open = False
        self.calls: dict[int, dict[str, Any]] = {}  # a tool call's index -> its item
        self.spaces = _namespaces(body.get("tools") or [])
        self.seq = 0

    def _response(self, out: dict[str, Any]) -> dict[str, Any]:
        return {**response_from_chat(out, self.body), "id": self.rid, "created_at": self.created}

    def start(self) -> list[dict[str, Any]]:
        blank = {"choices": [{"message": {"role": "assistant", "content": ""}, "finish_reason": None}],
                 "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                 "model": self.body.get("model") or ""}  # fmt: skip
        pending = {**self._response(blank), "status": "in_progress", "output": [], "usage": None}
        return [
            {"type": "response.created", "response": pending},
            {"type": "response.in_progress", "response": pending},
        ]

    def _ref(self, item: dict[str, Any] | None = None) -> dict[str, Any]:
        at = len(self.items) - 1 if item is None else next(i for i, x in enumerate(self.items) if x is item)
        return {"item_id": self.items[at]["id"], "output_index": at}

    def _open(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        evs = self._close()
        self.items.append(item)
        self.open = True
        evs.append({"type": "response.output_item.added", "output_index": len(self.items) - 1,
                    "item": {**item, "status": "in_progress"}})  # fmt: skip
        if item["type"] == "message":
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            evs.append({"type": "response.content_part.added", **self._ref(), "content_index": 0, "part": part})
        return evs

    def _close(self) -> list[dict[str, Any]]:
        if not self.open:
            return []
        self.open = False
        item, ref = self.items[-1], self._ref()
        item["status"] = "completed"
        if item["type"] == "reasoning":
            text = item.pop("text")
            item["content"] = [{"type": "reasoning_text", "text": text}]
            evs = [{"type": "response.reasoning_text.done", **ref, "content_index": 0, "text": text}]
        elif item["type"] == "message":
            part = {"type": "output_text", "text": item.pop("text"), "annotations": [], "logprobs": []}
            item["content"] = [part]
            evs = [{"type": "response.output_text.done", **ref, "content_index": 0, "text": part["text"],
                    "logprobs": []},
                   {"type": "response.content_part.done", **ref, "content_index": 0, "part": part}]  # fmt: skip
        else:
            evs = [{"type": "response.function_call_arguments.done", **ref, "arguments": item["arguments"],
                    "name": item["name"]}]  # fmt: skip
        return [*evs, {"type": "response.output_item.done", "output_index": ref["output_index"], "item": dict(item)}]

    def add(self, delta: dict[str, Any]) -> list[dict[str, Any]]:
        evs: list[dict[str, Any]] = []
        last = self.items[-1]["type"] if self.open else None
        reasoning = reasoning_of(delta)
        if reasoning:
            if last != "reasoning":
                evs += self._open({"type": "reasoning", "id": _id("rs"), "summary": [], "text": "", "content": []})
            self.items[-1]["text"] += reasoning
            evs.append({"type": "response.reasoning_text.delta", **self._ref(), "content_index": 0, "delta": reasoning})
        if delta.get("content"):
            if last != "message":
                evs += self._open({"type": "message", "id": _id("msg"), "role": "assistant", "text": "", "content": []})
            self.items[-1]["text"] += delta["content"]
            evs.append({"type": "response.output_text.delta", **self._ref(), "content_index": 0,
                        "delta": delta["content"], "logprobs": []})  # fmt: skip
        for tc in delta.get("tool_calls") or []:
            index, fn = int(tc.get("index") or 0), tc.get("function") or {}
            if index not in self.calls:
                item = {"type": "function_call", "id": _id("fc"), "call_id": tc.get("id") or _id("call"),
                        "name": fn.get("name") or "", "arguments": ""}  # fmt: skip
                if item["name"] in self.spaces:
                    item["namespace"] = self.spaces[item["name"]]
                evs += self._open(item)
                self.calls[index] = item
            item = self.calls[index]
            if fn.get("arguments"):
                item["arguments"] += fn["arguments"]
                evs.append({"type": "response.function_call_arguments.delta", **self._ref(item),
                            "delta": fn["arguments"]})  # fmt: skip
        return evs

    def finish(self, out: dict[str, Any]) -> list[dict[str, Any]]:
        evs = self._close()
        response = self._response(out)
        streamed = {kind: sum(1 for i in self.items if i["type"] == kind) for kind in ("reasoning", "message")}
        streamed["function_call"] = len(self.calls)
        extra = []  # what the whole reply has that no delta opened (an empty message)
        for item in response["output"]:
            if streamed.get(item["type"], 0) > 0:
                streamed[item["type"]] -= 1
            else:
                extra.append(item)
        for item in extra:
            evs += _item_events(len(self.items), item)
            evs.append({"type": "response.output_item.done", "output_index": len(self.items), "item": item})
            self.items.append(item)
        response["output"] = self.items
        done = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
        return [*evs, {"type": done, "response": response}]

    def encode(self, events: list[dict[str, Any]]) -> bytes:
        numbered = []
        for e in events:
            numbered.append({**e, "sequence_number": self.seq})
            self.seq += 1
        return sse(numbered, done=False, named=True)

"""OpenAI's Responses API (`POST /v1/responses`, the only one Codex CLI speaks) on the gateway: the request is
translated to a chat completion for the engine (as NeMo Gym does), the engine's message back to a response
(a `reasoning` item, a `message` item, one `function_call` item per tool call), plain or as the stream of named
events the OpenAI SDK and Codex read (`response.created` ... `response.completed`).

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
from trialbook.rl.chat_wire import reasoning_of, text_of


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
            if open_turn and not last.get("tool_calls") and not last.get("content"):
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


def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
    """A response as the stream of events a streaming client reads, each with its sequence number."""
    pending = {**response, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    evs: list[dict[str, Any]] = [{"type": "response.created", "response": pending},
                                 {"type": "response.in_progress", "response": pending}]  # fmt: skip
    for i, item in enumerate(response["output"]):
        evs += _item_events(i, item)
        evs.append({"type": "response.output_item.done", "output_index": i, "item": item})
    done = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    evs.append({"type": done, "response": response})
    return [{**e, "sequence_number": n} for n, e in enumerate(evs)]

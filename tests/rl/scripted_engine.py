"""A scripted engine shaped as vLLM on 127.0.0.1, for what no engine that runs here does (SmolLM2-135M on
llama-cpp-python calls no tools): its chat endpoint answers with the next scripted assistant message (content,
tool calls, reasoning) and, as vLLM with `return_token_ids`, the prompt's and the completion's token ids.

Its tokenizer is UTF-8 bytes and its chat template a plain one that renders everything a message carries
(reasoning, text, each tool call's id, name and arguments, a tool result's call id), so a client or a gateway that
loses or changes any of it between turns makes the next prompt stop extending the last one: the trajectory audit
(rl/trajectory.py) then reports a broken prefix. Arguments are rendered as parsed JSON (as vLLM gives them to a
template), so their spacing is free.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from httpd import LocalServer

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content)
    return content or ""


def _args(raw: Any) -> Any:
    try:
        return json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return raw


def body_of(m: dict[str, Any]) -> str:
    """What the template renders of one message, between its role tag and `<|end|>`."""
    out = ""
    reasoning = m.get("reasoning_content") or m.get("reasoning")
    if reasoning:
        out += f"<think>{reasoning}</think>"
    out += _text(m.get("content"))
    for tc in m.get("tool_calls") or []:
        fn = tc["function"]
        call = {"id": tc.get("id"), "name": fn["name"], "arguments": _args(fn.get("arguments"))}
        out += "<tool_call>" + json.dumps(call, sort_keys=True) + "</tool_call>"
    if m.get("role") == "tool":
        out = f"[{m.get('tool_call_id')}]" + out
    return out


def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    head = f"<|tools|>{json.dumps(tools, sort_keys=True)}<|end|>" if tools else ""
    return head + "".join(f"<|{m['role']}|>{body_of(m)}<|end|>" for m in messages) + "<|assistant|>"


def ids(text: str) -> list[int]:
    return list(text.encode())


class ScriptedEngine:
    """Replies in order from `script` (a message, or a function of the request that makes one)."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.server = LocalServer(self._respond)
        self.url = self.server.url

    def _respond(self, method: str, path: str, raw: bytes) -> tuple[int, bytes]:
        if method == "GET" and path.startswith("/v1/models"):
            return 200, json.dumps({"object": "list", "data": [{"id": "scripted", "object": "model"}]}).encode()
        if method != "POST" or not path.startswith("/v1/chat/completions"):
            return 404, b'{"error": {"message": "not found"}}'
        body = json.loads(raw)
        self.requests.append(body)
        if not self.script:
            return 500, b'{"error": {"message": "the script has no more replies"}}'
        step = self.script.pop(0)
        message = {"role": "assistant", **(step(body) if callable(step) else step)}
        prompt = render(body["messages"], body.get("tools"))
        completion = ids(body_of(message) + "<|end|>")
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        choice = {"index": 0, "message": {"content": None, **message}, "finish_reason": finish, "token_ids": completion,
                  "logprobs": {"content": [{"token": "", "logprob": -0.25} for _ in completion]}}  # fmt: skip
        reply = {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1, "model": body.get("model"),
                 "choices": [choice], "prompt_token_ids": ids(prompt),
                 "usage": {"prompt_tokens": len(ids(prompt)), "completion_tokens": len(completion)}}  # fmt: skip
        return 200, json.dumps(reply).encode()

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> ScriptedEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

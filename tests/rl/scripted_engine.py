"""A scripted engine shaped as vLLM on 127.0.0.1, for what no engine that runs here does (SmolLM2-135M on
llama-cpp-python calls no tools): its chat endpoint answers with the next scripted assistant message (content,
tool calls, reasoning) and, as vLLM with `return_token_ids`, the prompt's and the completion's token ids.

Its tokenizer is UTF-8 bytes and its chat template a plain one that renders everything a message carries
(reasoning, text, each tool call's id, name and arguments, a tool result's call id), so a client or a gateway that
loses or changes any of it between turns makes the next prompt stop extending the last one: the trajectory audit
(trialbook/trajectory.py) then reports a broken prefix. Arguments are rendered as parsed JSON (as vLLM gives them to a
template), so their spacing is free.

Asked to stream (`stream: true`), it answers as vLLM streams: a first chunk with the role and `prompt_token_ids`, one
chunk per delta (the reasoning, the content, each tool call's head and then its arguments) carrying that delta's
token ids, a last chunk with the finish reason, and the usage chunk. `gate`, when given, holds every chunk after the
first delta until it is set: a test sees what a client has before the engine has finished.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
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

    def __init__(self, script: list[Reply], gate: threading.Event | None = None) -> None:
        self.script = list(script)
        self.gate = gate
        self.requests: list[dict[str, Any]] = []
        self.server = LocalServer(self._respond)
        self.url = self.server.url

    def _respond(self, method: str, path: str, raw: bytes) -> tuple[int, bytes | Iterator[bytes]]:
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
        if body.get("stream"):
            return 200, self._stream(body, message, ids(prompt), finish)
        choice = {"index": 0, "message": {"content": None, **message}, "finish_reason": finish, "token_ids": completion,
                  "logprobs": {"content": [{"token": "", "logprob": -0.25} for _ in completion]}}  # fmt: skip
        reply = {"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1, "model": body.get("model"),
                 "choices": [choice], "prompt_token_ids": ids(prompt),
                 "usage": {"prompt_tokens": len(ids(prompt)), "completion_tokens": len(completion)}}  # fmt: skip
        return 200, json.dumps(reply).encode()

    def _stream(self, body: dict[str, Any], message: dict[str, Any], prompt: list[int], finish: str) -> Iterator[bytes]:
        def chunk(delta: dict[str, Any], token_ids: list[int], **extra: Any) -> bytes:
            lp = {"content": [{"token": "", "logprob": -0.25} for _ in token_ids]}
            choice = {"index": 0, "delta": delta, "token_ids": token_ids, "logprobs": lp, **extra}
            obj = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": body.get("model"),
                   "choices": [choice]}  # fmt: skip
            return f"data: {json.dumps(obj)}\n\n".encode()

        reasoning = message.get("reasoning_content") or message.get("reasoning")
        pieces = [({"reasoning_content": reasoning}, f"<think>{reasoning}</think>")] if reasoning else []
        if message.get("content"):
            pieces.append(({"content": message["content"]}, _text(message["content"])))
        for i, tc in enumerate(message.get("tool_calls") or []):
            fn = tc["function"]
            call = {"id": tc.get("id"), "name": fn["name"], "arguments": _args(fn.get("arguments"))}
            head = {
                "index": i,
                "id": tc.get("id"),
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            rendered = "<tool_call>" + json.dumps(call, sort_keys=True) + "</tool_call>"
            args = {"tool_calls": [{"index": i, "function": {"arguments": fn.get("arguments", "")}}]}
            pieces += [({"tool_calls": [head]}, ""), (args, rendered)]
        first = json.dumps({"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "model": body.get("model"),
                            "prompt_token_ids": prompt,
                            "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})  # fmt: skip
        yield f"data: {first}\n\n".encode()
        completion = []
        for n, (delta, text) in enumerate(pieces):
            if n == 1 and self.gate is not None:
                self.gate.wait(30)
            completion += ids(text)
            yield chunk(delta, ids(text))
        if len(pieces) < 2 and self.gate is not None:
            self.gate.wait(30)
        completion += ids("<|end|>")
        yield chunk({}, ids("<|end|>"), finish_reason=finish)
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(completion)}
        yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n".encode()

    def close(self) -> None:
        self.server.close()

    def __enter__(self) -> ScriptedEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

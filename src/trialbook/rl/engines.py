"""The engines behind the model gateway (rl/gateway.py): one adapter per engine, each turning an OpenAI chat
request into a `Generation` (the engine's reply and the exact token ids it saw and produced).

How the ids are had, per engine (ENGINES; the `source` of each call says which way):
- vLLM / SGLang: the chat endpoint returns them (`return_token_ids`): `returned`. The engine renders the tools and
  parses the reply itself: its message (content, tool calls, reasoning) is kept as it was returned.
- llama.cpp's own server: the gateway renders the prompt with the engine (`/apply-template`, tools included),
  tokenizes it with the engine (`/tokenize`) and generates from those ids (`/completion`, `n_probs`,
  `return_tokens`): `returned`.
- llama-cpp-python's server (no token ids anywhere in its API): the gateway renders the model's chat template
  itself (tools and the history's tool calls included), generates with `/v1/completions` (logprobs: one piece per
  generated token), and asks the engine's tokenizer (`/extras/tokenize`, `/extras/detokenize`) for the prompt's
  ids and for each piece's id, checked by detokenizing it back: `engine-tokenizer`. A piece that maps to no single
  id (a token cut inside a UTF-8 character) makes the call `inexact` rather than guessed.
For the two llama.cpp engines the reply is text: when the request offered tools, tool calls are read from it in
the Hermes form most tool-calling templates use (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`,
chat_wire.parse_tool_calls), and a leading `<think>...</think>` becomes the message's `reasoning_content`; a
request that forces a tool call (`tool_choice` "required" or a named function) is generated under a grammar that
admits only such a call (hermes.tool_grammar), as vLLM's guided decoding does for it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import requests

from trialbook.agents.endpoints import normalize, probe
from trialbook.errors import UserError
from trialbook.rl.chat_wire import REASONING_KEYS, HeldText, MessageBuilder, template_messages, text_message
from trialbook.rl.hermes import forced, tool_grammar

WV_HEADER = "X-Weight-Version"


@dataclass
class Generation:
    """What an engine adapter returns for one chat request."""

    text: str
    finish_reason: str | None
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float | None]
    source: str
    model: str | None = None
    weight_version: int | None = None
    message: dict[str, Any] | None = None  # the assistant message (content, tool_calls, reasoning); None: text only


class Engine(Protocol):
    name: str

    def chat(self, body: dict[str, Any], timeout: float) -> Generation: ...


class StreamingEngine(Engine, Protocol):
    def stream(self, body: dict[str, Any], timeout: float) -> Iterator[dict[str, Any] | Generation]:
        """The reply's chat deltas (reasoning, content, tool calls) as the engine streams them, then the whole
        Generation (the same as `chat` gives) once the engine is done."""
        ...


def _lines(resp: requests.Response) -> Iterator[bytes]:
    """A streamed body's lines as they arrive: read1 gives what the socket has (a close-delimited body too, where
    iter_content(None) would wait for the end)."""
    read1 = getattr(resp.raw, "read1", None)
    if read1 is None:  # urllib3 < 2
        yield from resp.iter_lines(chunk_size=None)  # type: ignore[call-overload]  # requests passes None on to iter_content
        return
    rest = b""
    while data := read1(65536, decode_content=True):
        *lines, rest = (rest + data).split(b"\n")
        yield from (line.rstrip(b"\r") for line in lines)
    if rest:
        yield rest


def _events(resp: requests.Response) -> Iterator[dict[str, Any]]:
    """The JSON objects of a server-sent-events response, as they arrive (`[DONE]` ends it)."""
    for line in _lines(resp):
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            return
        yield json.loads(data)


def _post_stream(url: str, payload: dict[str, Any], timeout: float) -> requests.Response:
    resp = requests.post(url, json=payload, timeout=timeout, stream=True)
    if resp.status_code != 200:
        raise EngineHTTPError(resp.status_code, resp.text[:2000])
    return resp


def _post(url: str, payload: dict[str, Any], timeout: float) -> requests.Response:
    resp = requests.post(url, json=payload, timeout=timeout)
    if resp.status_code != 200:
        raise EngineHTTPError(resp.status_code, resp.text[:2000])
    return resp


class EngineHTTPError(Exception):
    def __init__(self, status: int, text: str) -> None:
        super().__init__(f"engine answered {status}: {text[:300]}")
        self.status = status
        self.text = text


def _max_tokens(body: dict[str, Any], default: int = 256) -> int:
    value = body.get("max_completion_tokens") or body.get("max_tokens")
    return int(value) if value else default


def _stops(body: dict[str, Any]) -> list[str]:
    stop = body.get("stop")
    return [stop] if isinstance(stop, str) else list(stop or [])


def _reported_wv(resp: requests.Response, data: Any) -> int | None:
    raw = resp.headers.get(WV_HEADER)
    if raw is None and isinstance(data, dict):
        raw = data.get("weight_version")
    try:
        return None if raw is None else int(raw)
    except (TypeError, ValueError):
        return None


class OpenAITokens:
    """vLLM (and engines that follow it): the chat endpoint returns `prompt_token_ids` and each choice's
    `token_ids` when asked with `return_token_ids`; logprobs with `logprobs`."""

    name = "vllm"

    def __init__(self, base: str) -> None:
        self.base = base

    def chat(self, body: dict[str, Any], timeout: float) -> Generation:
        payload = {**body, "stream": False, "return_token_ids": True, "logprobs": True}
        resp = _post(f"{self.base}/chat/completions", payload, timeout)
        data = resp.json()
        choice = data["choices"][0]
        content = ((choice.get("logprobs") or {}).get("content")) or []
        ids = choice.get("token_ids")
        prompt = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
        message = choice.get("message") or {"role": "assistant", "content": ""}
        return Generation(
            text=message.get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_ids=list(prompt or []),
            completion_ids=list(ids or []),
            logprobs=[t.get("logprob") for t in content] if content else [None] * len(ids or []),
            source="returned" if ids is not None and prompt is not None else "none",
            model=data.get("model"),
            weight_version=_reported_wv(resp, data),
            message=message,
        )

    def stream(self, body: dict[str, Any], timeout: float) -> Iterator[dict[str, Any] | Generation]:
        payload = {**body, "stream": True, "return_token_ids": True, "logprobs": True,
                   "stream_options": {"include_usage": True}}  # fmt: skip
        built, ids, logprobs = MessageBuilder(), list[int](), list[float | None]()
        prompt: list[int] | None = None
        finish, model, wv = None, None, None
        with _post_stream(f"{self.base}/chat/completions", payload, timeout) as resp:
            for chunk in _events(resp):
                model = chunk.get("model") or model
                prompt = chunk.get("prompt_token_ids") or prompt
                wv = _reported_wv(resp, chunk) if wv is None else wv
                for choice in chunk.get("choices") or []:
                    prompt = choice.get("prompt_token_ids") or prompt
                    ids += choice.get("token_ids") or []
                    logprobs += [t.get("logprob") for t in ((choice.get("logprobs") or {}).get("content") or [])]
                    finish = choice.get("finish_reason") or finish
                    delta = {k: v for k, v in (choice.get("delta") or {}).items()
                             if k in ("content", "tool_calls", *REASONING_KEYS) and v}  # fmt: skip
                    if delta:
                        built.add(delta)
                        yield delta
        message = built.message()
        yield Generation(
            text=message.get("content") or "",
            finish_reason=finish,
            prompt_ids=list(prompt or []),
            completion_ids=ids,
            logprobs=logprobs if len(logprobs) == len(ids) else [None] * len(ids),
            source="returned" if ids and prompt is not None else "none",
            model=model,
            weight_version=wv,
            message=message,
        )


class LlamaCppServer:
    """llama.cpp's own server: template and tokenizer from the engine, generation from the ids."""

    name = "llama.cpp"

    def __init__(self, base: str) -> None:
        self.root = base.removesuffix("/v1")

    def chat(self, body: dict[str, Any], timeout: float) -> Generation:
        rendering: dict[str, Any] = {"messages": template_messages(body["messages"])}
        if body.get("tools"):
            rendering["tools"] = body["tools"]
        prompt = _post(f"{self.root}/apply-template", rendering, timeout).json()["prompt"]
        tokenized = {"content": prompt, "add_special": True, "parse_special": True}
        ids = _post(f"{self.root}/tokenize", tokenized, timeout).json()["tokens"]
        payload: dict[str, Any] = {
            "prompt": ids, "n_predict": _max_tokens(body), "temperature": body.get("temperature", 1.0),
            "n_probs": 1, "return_tokens": True, "stop": _stops(body), "cache_prompt": True,
        }  # fmt: skip
        for key in ("top_p", "seed"):
            if body.get(key) is not None:
                payload[key] = body[key]
        if forced(body):  # the request forces a tool call: generated under a grammar that admits only one
            payload["grammar"] = tool_grammar(forced(body))
        resp = _post(f"{self.root}/completion", payload, timeout)
        data = resp.json()
        probs = data.get("completion_probabilities") or []
        out = list(data.get("tokens") or [p.get("id") for p in probs])
        stop = data.get("stop_type")
        text = data.get("content") or ""
        return Generation(
            text=text,
            finish_reason="length" if stop == "limit" else "stop",
            prompt_ids=list(ids),
            completion_ids=out,
            logprobs=[p.get("logprob") for p in probs] if len(probs) == len(out) else [None] * len(out),
            source="returned",
            model=data.get("model"),
            weight_version=_reported_wv(resp, data),
            message=text_message(text, bool(body.get("tools"))),
        )


def _render(template: str, messages: list[dict[str, Any]], bos: str, eos: str,
            tools: list[dict[str, Any]] | None = None) -> str:  # fmt: skip
    """A Hugging Face chat template, rendered the way transformers renders it (sandboxed Jinja)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise UserError(f"chat template: {message}")

    env.globals["raise_exception"] = raise_exception
    # transformers' own tojson (Jinja's escapes <, > and & for HTML, which no model was trained on)
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys
    )
    return env.from_string(template).render(
        messages=messages, tools=tools or None, add_generation_prompt=True, bos_token=bos, eos_token=eos
    )


class LlamaCppPython:
    """llama-cpp-python's server: its API has no token ids, so the gateway renders the chat template, generates
    from the text, and maps the prompt and every generated piece to ids with the engine's own tokenizer."""

    name = "llama-cpp-python"

    def __init__(self, base: str, chat_template: str, bos_token: str = "", eos_token: str = "") -> None:
        self.base = base
        self.root = base.removesuffix("/v1")
        self.template, self.bos, self.eos = chat_template, bos_token, eos_token
        self._piece: dict[int, str] = {}  # id -> its text, as the engine detokenizes it
        self._id: dict[str, int] = {}  # piece -> id, checked both ways
        self._lead: list[int] | None = None  # what the tokenizer puts before any text (a BOS, or nothing)
        self._lock = threading.Lock()

    def _tokenize(self, text: str, model: str | None, timeout: float) -> list[int]:
        return list(_post(f"{self.root}/extras/tokenize", {"input": text, "model": model}, timeout).json()["tokens"])

    def _detokenize(self, token: int, model: str | None, timeout: float) -> str:
        with self._lock:
            if token in self._piece:
                return self._piece[token]
        text: str = _post(f"{self.root}/extras/detokenize", {"tokens": [token], "model": model}, timeout).json()["text"]
        with self._lock:
            self._piece[token] = text
        return text

    def _bare(self, text: str, model: str | None, timeout: float) -> list[int]:
        """Tokenize without the leading special token(s) the engine adds to every text."""
        if self._lead is None:
            self._lead = self._tokenize("", model, timeout)
        ids = self._tokenize(text, model, timeout)
        return ids[len(self._lead) :] if ids[: len(self._lead)] == self._lead else ids

    def _piece_ids(self, pieces: list[str], text: str, model: str | None, timeout: float) -> list[int] | None:
        """The id of every generated piece, each checked by detokenizing it; None if one has no single id."""
        whole = self._bare(text, model, timeout)
        if len(whole) == len(pieces) and all(
            self._detokenize(i, model, timeout) == p for i, p in zip(whole, pieces, strict=True)
        ):
            return whole
        out = []
        for piece in pieces:
            known = self._id.get(piece)
            if known is None:
                cand = self._bare(piece, model, timeout)
                if len(cand) != 1 or self._detokenize(cand[0], model, timeout) != piece:
                    return None
                known = self._id[piece] = cand[0]
            out.append(known)
        return out

    def _request(self, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """(the rendered prompt, the /v1/completions payload) of a chat request."""
        prompt = _render(self.template, template_messages(body["messages"]), self.bos, self.eos, body.get("tools"))
        payload: dict[str, Any] = {"prompt": prompt, "max_tokens": _max_tokens(body), "logprobs": 1,
                                   "temperature": body.get("temperature", 1.0),
                                   "stop": _stops(body) or None}  # fmt: skip
        for key in ("model", "top_p", "seed", "presence_penalty", "frequency_penalty"):
            if body.get(key) is not None:
                payload[key] = body[key]
        if forced(body):
            payload["grammar"] = tool_grammar(forced(body))
        return prompt, payload

    def _generation(self, body: dict[str, Any], prompt: str, text: str, pieces: list[str],
                    logprobs: list[float | None], finish: str | None, served: tuple[str | None, int | None],
                    timeout: float) -> Generation:  # fmt: skip
        """The Generation of a completion; `served`: (the model, the weight version) the engine reported."""
        model, wv = served
        asked = body.get("model")
        prompt_ids = self._tokenize(prompt, asked, timeout)
        ids = self._piece_ids(pieces, text, asked, timeout)
        if ids is not None and finish == "stop" and not _stops(body) and self.eos:
            # the engine stopped on its end-of-turn token, which it generated but does not return: it is part
            # of the sequence the model saw (the chat template puts it after the reply in the next prompt)
            ids = [*ids, *self._bare(self.eos, asked, timeout)]
            logprobs = [*logprobs, None]
        return Generation(
            text=text,
            finish_reason=finish,
            prompt_ids=prompt_ids,
            completion_ids=ids or [],
            logprobs=logprobs if ids is not None else [],
            source="engine-tokenizer" if ids is not None else "inexact",
            model=model,
            weight_version=wv,
            message=text_message(text, bool(body.get("tools"))),
        )

    def chat(self, body: dict[str, Any], timeout: float) -> Generation:
        prompt, payload = self._request(body)
        resp = _post(f"{self.base}/completions", payload, timeout)
        data = resp.json()
        choice = data["choices"][0]
        lp = choice.get("logprobs") or {}
        pieces, logprobs = list(lp.get("tokens") or []), list(lp.get("token_logprobs") or [])
        return self._generation(body, prompt, choice.get("text") or "", pieces, logprobs, choice.get("finish_reason"),
                                (data.get("model"), _reported_wv(resp, data)), timeout)  # fmt: skip

    def stream(self, body: dict[str, Any], timeout: float) -> Iterator[dict[str, Any] | Generation]:
        prompt, payload = self._request(body)
        held = HeldText(bool(body.get("tools")), hold_all=bool(forced(body)))
        pieces: list[str] = []
        logprobs: list[float | None] = []
        finish, model, wv = None, None, None
        with _post_stream(f"{self.base}/completions", {**payload, "stream": True}, timeout) as resp:
            for chunk in _events(resp):
                model = chunk.get("model") or model
                wv = _reported_wv(resp, chunk) if wv is None else wv
                for choice in chunk.get("choices") or []:
                    lp = choice.get("logprobs") or {}
                    pieces += lp.get("tokens") or []
                    logprobs += lp.get("token_logprobs") or []
                    finish = choice.get("finish_reason") or finish
                    yield from held.add(choice.get("text") or "")
        gen = self._generation(body, prompt, held.text, pieces, logprobs, finish, (model, wv), timeout)
        yield from held.finish(gen.message or {})
        yield gen


def template_of(gguf: str | Path) -> tuple[str, str, str]:
    """(chat template, BOS text, EOS text) from a GGUF file's metadata (reads the vocabulary only)."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    meta = llm.metadata
    template = meta.get("tokenizer.chat_template")
    if not template:
        raise UserError(f"{gguf} has no tokenizer.chat_template: pass chat_template=")

    def text(key: str) -> str:
        value = meta.get(key)
        return "" if value is None else llm.detokenize([int(value)], special=True).decode("utf-8", "replace")

    return template, text("tokenizer.ggml.bos_token_id"), text("tokenizer.ggml.eos_token_id")


ENGINES = {"vllm": OpenAITokens, "sglang": OpenAITokens, "llama.cpp": LlamaCppServer,
           "llama-cpp-python": LlamaCppPython}  # fmt: skip


def engine_for(url: str, chat_template: tuple[str, str, str] | None = None, kind: str | None = None) -> Engine:
    """The adapter for the engine at `url` (asked what it is unless `kind` says)."""
    base = normalize(url)
    kind = kind or probe(base).engine or ""
    if kind == "llama-cpp-python":
        if chat_template is None:
            raise UserError("a llama-cpp-python engine needs chat_template= (template_of(model.gguf))")
        return LlamaCppPython(base, *chat_template)
    if kind == "llama.cpp":
        return LlamaCppServer(base)
    return OpenAITokens(base)

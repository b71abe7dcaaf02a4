"""The model gateway: an OpenAI-compatible proxy between any agent and the policy's engine that records,
for every model call of a trial, the exact token ids the engine saw and produced.

    with Gateway("http://127.0.0.1:8000/v1", chat_template=template_of(gguf)) as gw:
        agent_url = gw.url_for("trial-7")          # give the agent this base URL (or header X-Trialbook-Trial)
        gw.set_weight_version(3)                   # the trainer, at each weight sync (or POST /admin/weight_version)
        ...
        calls = gw.take("trial-7")                 # [Call]: prompt ids, completion ids, logprobs, wv, model

An agent the gateway knows nothing about (any HTTP client) only needs the base URL: chat completions are
answered in OpenAI's shape; everything else (`/v1/models`, `/props`, ...) passes through to the engine.

How the ids are had, per engine (ENGINES; the `source` of each call says which way):
- vLLM / SGLang: the chat endpoint returns them (`return_token_ids`): `returned`.
- llama.cpp's own server: the gateway renders the prompt with the engine (`/apply-template`), tokenizes it
  with the engine (`/tokenize`) and generates from those ids (`/completion`, `n_probs`, `return_tokens`):
  `returned`.
- llama-cpp-python's server (no token ids anywhere in its API): the gateway renders the model's chat template
  itself, generates with `/v1/completions` (logprobs: one piece per generated token), and asks the engine's
  tokenizer (`/extras/tokenize`, `/extras/detokenize`) for the prompt's ids (the same call the engine makes on
  that text) and for each piece's id, checked by detokenizing it back: `engine-tokenizer`. A piece that maps to
  no single id (a token cut inside a UTF-8 character) makes the call `inexact` rather than guessed.
The weight version of a call is what the engine reports (header `X-Weight-Version` or a `weight_version`
field), else the last one the trainer set; both the version at the call's start and at its end are kept, so a
rollout whose weights changed mid-episode says so.
"""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import requests

from trialbook.agents.endpoints import normalize, probe
from trialbook.errors import UserError

TRIAL_HEADER = "X-Trialbook-Trial"
# verifiers' clients send the rollout's trajectory id in this header on every call: the trial key when
# neither TRIAL_HEADER nor a /t/<key>/ path names one
SESSION_HEADER = "X-Session-ID"
WV_HEADER = "X-Weight-Version"
_TRIAL_PATH = re.compile(r"^/t/([A-Za-z0-9._:@=+-]{1,200})(/.*)$")


@dataclass
class Call:
    """One chat completion through the gateway, as the engine saw and produced it."""

    trial: str
    index: int  # the call's number within its trial (0, 1, ...)
    model: str
    engine: str
    source: str  # returned | engine-tokenizer | inexact | none (ENGINES says how each engine gives ids)
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float | None]  # one per completion id (None where the engine gave none, e.g. a stop token)
    finish_reason: str | None
    wv_start: int | None  # the weight version when the call began ...
    wv_end: int | None  # ... and when it ended (differs if the trainer synced weights meanwhile)
    started: float
    finished: float
    text: str = ""

    @property
    def exact(self) -> bool:
        return self.source in ("returned", "engine-tokenizer")


def take_calls(gateway_url: str, trial: str, timeout: float = 30.0) -> list[Call]:
    """A trial's calls from a gateway in another process (`POST /admin/take/<trial>`), forgotten there."""
    root = normalize(gateway_url).removesuffix("/v1")
    resp = requests.post(f"{root}/admin/take/{trial}", timeout=timeout)
    resp.raise_for_status()
    return [Call(**row) for row in resp.json()]


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


class Engine(Protocol):
    name: str

    def chat(self, body: dict[str, Any], timeout: float) -> Generation: ...


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
        return Generation(
            text=(choice.get("message") or {}).get("content") or "",
            finish_reason=choice.get("finish_reason"),
            prompt_ids=list(prompt or []),
            completion_ids=list(ids or []),
            logprobs=[t.get("logprob") for t in content] if content else [None] * len(ids or []),
            source="returned" if ids is not None and prompt is not None else "none",
            model=data.get("model"),
            weight_version=_reported_wv(resp, data),
        )


class LlamaCppServer:
    """llama.cpp's own server: template and tokenizer from the engine, generation from the ids."""

    name = "llama.cpp"

    def __init__(self, base: str) -> None:
        self.root = base.removesuffix("/v1")

    def chat(self, body: dict[str, Any], timeout: float) -> Generation:
        messages = [{"role": m["role"], "content": m.get("content") or ""} for m in body["messages"]]
        prompt = _post(f"{self.root}/apply-template", {"messages": messages}, timeout).json()["prompt"]
        tokenized = {"content": prompt, "add_special": True, "parse_special": True}
        ids = _post(f"{self.root}/tokenize", tokenized, timeout).json()["tokens"]
        payload: dict[str, Any] = {
            "prompt": ids, "n_predict": _max_tokens(body), "temperature": body.get("temperature", 1.0),
            "n_probs": 1, "return_tokens": True, "stop": _stops(body), "cache_prompt": True,
        }  # fmt: skip
        for key in ("top_p", "seed"):
            if body.get(key) is not None:
                payload[key] = body[key]
        resp = _post(f"{self.root}/completion", payload, timeout)
        data = resp.json()
        probs = data.get("completion_probabilities") or []
        out = list(data.get("tokens") or [p.get("id") for p in probs])
        stop = data.get("stop_type")
        return Generation(
            text=data.get("content") or "",
            finish_reason="length" if stop == "limit" else "stop",
            prompt_ids=list(ids),
            completion_ids=out,
            logprobs=[p.get("logprob") for p in probs] if len(probs) == len(out) else [None] * len(out),
            source="returned",
            model=data.get("model"),
            weight_version=_reported_wv(resp, data),
        )


def _render(template: str, messages: list[dict[str, Any]], bos: str, eos: str) -> str:
    """A Hugging Face chat template, rendered the way transformers renders it (sandboxed Jinja)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise UserError(f"chat template: {message}")

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos)


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
        text = _post(f"{self.root}/extras/detokenize", {"tokens": [token], "model": model}, timeout).json()["text"]
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

    def chat(self, body: dict[str, Any], timeout: float) -> Generation:
        messages = [{"role": m["role"], "content": m.get("content") or ""} for m in body["messages"]]
        prompt = _render(self.template, messages, self.bos, self.eos)
        model = body.get("model")
        stops = _stops(body)
        payload: dict[str, Any] = {"prompt": prompt, "max_tokens": _max_tokens(body), "logprobs": 1,
                                   "temperature": body.get("temperature", 1.0), "stop": stops or None}  # fmt: skip
        for key in ("model", "top_p", "seed", "presence_penalty", "frequency_penalty"):
            if body.get(key) is not None:
                payload[key] = body[key]
        resp = _post(f"{self.base}/completions", payload, timeout)
        data = resp.json()
        choice = data["choices"][0]
        lp = choice.get("logprobs") or {}
        pieces, logprobs = list(lp.get("tokens") or []), list(lp.get("token_logprobs") or [])
        text = choice.get("text") or ""
        prompt_ids = self._tokenize(prompt, model, timeout)
        ids = self._piece_ids(pieces, text, model, timeout)
        finish = choice.get("finish_reason")
        if ids is not None and finish == "stop" and not stops and self.eos:
            # the engine stopped on its end-of-turn token, which it generated but does not return: it is part
            # of the sequence the model saw (the chat template puts it after the reply in the next prompt)
            ids = [*ids, *self._bare(self.eos, model, timeout)]
            logprobs = [*logprobs, None]
        return Generation(
            text=text,
            finish_reason=finish,
            prompt_ids=prompt_ids,
            completion_ids=ids or [],
            logprobs=logprobs if ids is not None else [],
            source="engine-tokenizer" if ids is not None else "inexact",
            model=data.get("model"),
            weight_version=_reported_wv(resp, data),
        )


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


@dataclass
class Gateway:
    """The proxy itself (a thread in this process, or `python -m trialbook.rl.gateway` for a shared one)."""

    engine_url: str
    chat_template: tuple[str, str, str] | None = None
    engine_kind: str | None = None
    host: str = "127.0.0.1"
    port: int = 0
    timeout_s: float = 600.0
    log: Path | None = None  # every call also appended here as one JSON line
    weight_version: int | None = None
    _calls: dict[str, list[Call]] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.engine_url = normalize(self.engine_url)
        self.engine: Engine = engine_for(self.engine_url, self.chat_template, self.engine_kind)

    # -- the trainer's side
    def set_weight_version(self, version: int) -> None:
        with self._lock:
            self.weight_version = int(version)

    def calls(self, trial: str) -> list[Call]:
        with self._lock:
            return list(self._calls.get(trial, []))

    def take(self, trial: str) -> list[Call]:
        """The trial's calls, forgotten by the gateway."""
        with self._lock:
            return self._calls.pop(trial, [])

    @staticmethod
    def new_key() -> str:
        return uuid.uuid4().hex[:16]

    # -- serving
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def url_for(self, trial: str) -> str:
        return f"http://{self.host}:{self.port}/t/{trial}/v1"

    def start(self) -> Gateway:
        self._server = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="trialbook-gateway", daemon=True).start()
        return self

    def serve_forever(self) -> None:
        self._server = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._server.serve_forever()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def complete(self, trial: str, body: dict[str, Any]) -> dict[str, Any]:
        """Run one chat request through the engine, record it, and answer in OpenAI's chat shape."""
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            raise UserError("a chat completion needs a non-empty messages list")
        wv_start, started = self.weight_version, time.time()
        gen = self.engine.chat(body, self.timeout_s)
        wv_end = gen.weight_version if gen.weight_version is not None else self.weight_version
        if gen.weight_version is not None and wv_start is None:
            wv_start = gen.weight_version
        model = gen.model or body.get("model") or ""
        with self._lock:
            calls = self._calls.setdefault(trial, [])
            call = Call(trial=trial, index=len(calls), model=model, engine=self.engine.name, source=gen.source,
                        prompt_ids=gen.prompt_ids, completion_ids=gen.completion_ids, logprobs=gen.logprobs,
                        finish_reason=gen.finish_reason, wv_start=wv_start, wv_end=wv_end, started=started,
                        finished=time.time(), text=gen.text)  # fmt: skip
            calls.append(call)
            if self.log is not None:
                with self.log.open("a") as fh:
                    fh.write(json.dumps(asdict(call)) + "\n")
        n_completion = len(gen.completion_ids)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": gen.text},
            "finish_reason": gen.finish_reason,
            "token_ids": gen.completion_ids,
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": "", "logprob": v, "top_logprobs": []} for v in gen.logprobs]}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": int(started),
            "model": model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": len(gen.prompt_ids),
                "completion_tokens": n_completion,
                "total_tokens": len(gen.prompt_ids) + n_completion,
            },  # fmt: skip
            "prompt_token_ids": gen.prompt_ids,
            "weight_version": wv_end,
        }


def _handler(gw: Gateway) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet: the calls are the log
            pass

        def _split(self) -> tuple[str, str]:
            trial = self.headers.get(TRIAL_HEADER) or self.headers.get(SESSION_HEADER) or ""
            path = self.path
            m = _TRIAL_PATH.match(path)
            if m:
                trial, path = m.group(1), m.group(2)
            return trial, path

        def _send(self, status: int, body: bytes, ctype: str = "application/json", extra: dict | None = None):
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (its own timeout): nothing to tell
                self.close_connection = True

        def _json(self, status: int, obj: Any, extra: dict | None = None) -> None:
            self._send(status, json.dumps(obj).encode(), extra=extra)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _passthrough(self, method: str, path: str, data: bytes | None) -> None:
            target = gw.engine_url.removesuffix("/v1") + path
            headers = {"Content-Type": self.headers.get("Content-Type", "application/json")}
            try:
                resp = requests.request(method, target, data=data, headers=headers, timeout=gw.timeout_s)
            except requests.RequestException as exc:
                self._json(502, {"error": {"message": f"engine unreachable: {type(exc).__name__}"}})
                return
            self._send(resp.status_code, resp.content, resp.headers.get("Content-Type", "application/json"))

        def do_GET(self) -> None:  # noqa: N802 - http.server's names
            trial, path = self._split()
            if path.startswith("/admin/calls/"):
                self._json(200, [asdict(c) for c in gw.calls(path.removeprefix("/admin/calls/"))])
            elif path == "/admin/weight_version":
                self._json(200, {"version": gw.weight_version})
            else:
                self._passthrough("GET", path, None)

        def do_POST(self) -> None:  # noqa: N802
            trial, path = self._split()
            raw = self._body()
            if path == "/admin/weight_version":
                try:
                    gw.set_weight_version(int(json.loads(raw)["version"]))
                except (ValueError, KeyError, TypeError):
                    self._json(400, {"error": {"message": 'send {"version": <int>}'}})
                    return
                self._json(200, {"version": gw.weight_version})
                return
            if path.startswith("/admin/take/"):
                self._json(200, [asdict(c) for c in gw.take(path.removeprefix("/admin/take/"))])
                return
            if path.rstrip("/") != "/v1/chat/completions":
                self._passthrough("POST", path, raw)
                return
            try:
                body = json.loads(raw)
                out = gw.complete(trial, body)
            except (ValueError, UserError) as exc:
                self._json(400, {"error": {"message": str(exc)}})
                return
            except EngineHTTPError as exc:  # the engine's own refusal (a too-long prompt...) goes back as is
                self._send(exc.status, exc.text.encode())
                return
            except requests.RequestException as exc:
                self._json(502, {"error": {"message": f"engine unreachable: {type(exc).__name__}"}})
                return
            wv = {} if out["weight_version"] is None else {WV_HEADER: str(out["weight_version"])}
            if body.get("stream"):  # one chunk with the whole reply, then [DONE]
                chunk = {**out, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": out["choices"][0]["message"],
                                      "finish_reason": out["choices"][0]["finish_reason"]}]}  # fmt: skip
                sse = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
                self._send(200, sse, "text/event-stream", wv)
                return
            self._json(200, out, wv)

    return Handler


def main(argv: list[str] | None = None) -> int:
    """`python -m trialbook.rl.gateway --engine URL [--port N] [--gguf model.gguf] [--log calls.jsonl]`: a shared
    gateway for trainers and environments in other processes (verifiers' env servers, SkyRL's workers)."""
    import argparse
    import sys

    from trialbook.agents.endpoints import EndpointError
    from trialbook.errors import TrialbookError

    parser = argparse.ArgumentParser(prog="python -m trialbook.rl.gateway", description=main.__doc__)
    parser.add_argument("--engine", required=True, help="the engine's OpenAI base URL (vLLM, SGLang, llama.cpp)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--gguf", help="llama-cpp-python only: the served GGUF file (its chat template)")
    parser.add_argument("--log", type=Path, help="append every call here as one JSON line")
    args = parser.parse_args(argv)
    try:
        template = template_of(args.gguf) if args.gguf else None
        gw = Gateway(args.engine, chat_template=template, host=args.host, port=args.port, log=args.log)
    except (TrialbookError, EndpointError, ImportError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"gateway {gw.url} -> {gw.engine.name} at {gw.engine_url}", flush=True)
    try:
        gw.serve_forever()
    except OSError as exc:
        print(f"error: cannot serve on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

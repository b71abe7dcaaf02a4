"""The model gateway: an OpenAI-compatible proxy between any agent and the policy's engine that records,
for every model call of a trial, the exact token ids the engine saw and produced.

    with Gateway("http://127.0.0.1:8000/v1", chat_template=template_of(gguf)) as gw:
        agent_url = gw.url_for("trial-7")          # give the agent this base URL (or header X-Trialbook-Trial)
        gw.set_weight_version(3)                   # the trainer, at each weight sync (or POST /admin/weight_version)
        ...
        calls = gw.take("trial-7")                 # [Call]: prompt ids, completion ids, logprobs, wv, model

An agent the gateway knows nothing about (any HTTP client) only needs the base URL: chat completions are
answered in OpenAI's shape; everything else (`/v1/models`, `/props`, ...) passes through to the engine.

Every exchange is kept whole: the engine's message (content, tool calls, reasoning) goes back to the client as
the engine gave it, plain or as the standard stream of chunks (chat_wire.py), and is recorded with its ids.
Three wire APIs are answered and recorded, each on `/v1/...` or `/t/<trial>/v1/...` (a query string changes
nothing: Claude Code calls `/v1/messages?beta=true`):
- OpenAI chat completions (`/v1/chat/completions`);
- OpenAI's Responses API (`/v1/responses`, Codex CLI), translated to chat completions and back (responses_api.py);
- Anthropic's Messages API (`/v1/messages`, Claude Code), translated likewise (messages_api.py).
How each engine gives the ids: engines.py (ENGINES; the `source` of each call says which way).

Each call is tagged with its role in the episode: `policy` (the agent's turns), or `side` (a title, a summary, a
small-model helper: a request with header `X-Trialbook-Role: side`, or for a model named in `side_models`);
Trajectory.from_calls keeps only the policy's turns.
The weight version of a call is what the engine reports (header `X-Weight-Version` or a `weight_version`
field), else the last one the trainer set; both the version at the call's start and at its end are kept, so a
rollout whose weights changed mid-episode says so.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import socketserver
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import requests

from trialbook.access import TOKEN_ENV, bearer_ok, is_loopback, server_token
from trialbook.agents.endpoints import normalize
from trialbook.errors import UserError
from trialbook.rl import messages_api, responses_api
from trialbook.rl.chat_wire import ChatStream, message_deltas
from trialbook.rl.engines import (  # noqa: F401 - re-exported: the gateway's callers import them from here
    ENGINES,
    WV_HEADER,
    Engine,
    EngineHTTPError,
    Generation,
    LlamaCppPython,
    LlamaCppServer,
    OpenAITokens,
    _render,
    engine_for,
    template_of,
)

TRIAL_HEADER = "X-Trialbook-Trial"
# verifiers' clients send the rollout's trajectory id in this header on every call: the trial key when
# neither TRIAL_HEADER nor a /t/<key>/ path names one
SESSION_HEADER = "X-Session-ID"
ROLE_HEADER = "X-Trialbook-Role"  # `side`: a call that is no turn of the policy's episode
ROUTES = {"/v1/chat/completions": "chat", "/v1/responses": "responses", "/v1/messages": "messages"}
# each wire API's stream, event by event as the engine's deltas come
STREAMS = {"chat": ChatStream, "responses": responses_api.ResponseStream, "messages": messages_api.MessageStream}
_TRIAL_PATH = re.compile(r"^/t/([A-Za-z0-9._:@=+-]{1,200})(/.*)$")


@dataclass
class Call:
    """One model call through the gateway, as the engine saw and produced it."""

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
    message: dict[str, Any] | None = None  # the assistant message the client got (content, tool_calls, reasoning)
    api: str = "chat"  # the wire API the client spoke: chat | responses | messages
    role: str = "policy"  # policy (a turn of the episode) | side (a title, a helper: not trained on)

    @property
    def exact(self) -> bool:
        return self.source in ("returned", "engine-tokenizer")


def take_calls(gateway_url: str, trial: str, timeout: float = 30.0, token: str | None = None) -> list[Call]:
    """A trial's calls from a gateway in another process (`POST /admin/take/<trial>`), forgotten there; `token`
    (default TRIALBOOK_TOKEN where set): the gateway's (access.py)."""
    root = normalize(gateway_url).removesuffix("/v1")
    token = token or os.environ.get(TOKEN_ENV) or None
    auth = {"Authorization": f"Bearer {token}"} if token else None
    resp = requests.post(f"{root}/admin/take/{trial}", timeout=timeout, headers=auth)
    resp.raise_for_status()
    return [Call(**row) for row in resp.json()]


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
    side_models: tuple[str, ...] = ()  # requests for these model names are side calls (ROLE_HEADER does it too)
    token: str | None = field(default=None, repr=False)  # every TCP request must carry it (access.py); None: none
    _calls: dict[str, list[Call]] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _unix: list[_UnixServer] = field(default_factory=list, init=False, repr=False)

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

    def _check_bind(self) -> None:
        """A non-loopback bind needs a token (TRIALBOOK_TOKEN where none was given), else a UserError."""
        if self.token is None and not is_loopback(self.host):
            self.token = server_token(None, self.host, "gateway")

    def start(self) -> Gateway:
        self._check_bind()
        self._server = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        threading.Thread(target=self._server.serve_forever, name="trialbook-gateway", daemon=True).start()
        return self

    def serve_forever(self) -> None:
        self._check_bind()
        self._server = ThreadingHTTPServer((self.host, self.port), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._server.serve_forever()

    def start_unix(self, path: str | Path, trial: str) -> Gateway:
        """Also answer on a Unix socket at `path`: a sandbox with no network reaches the gateway through it (the
        socket's folder bound into the container, a relay there on 127.0.0.1: rl/cli_agents.py). Every call on it
        is `trial`'s, whatever key it names, and it answers no admin call and passes no unrecorded POST on."""
        server = _UnixServer(str(path), _handler(self))
        server.trial = trial
        os.chmod(path, 0o666)  # the sandbox's user, whoever it is, connects
        self._unix.append(server)
        threading.Thread(target=server.serve_forever, name="trialbook-gateway-unix", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        for server in self._unix:
            server.shutdown()
            server.server_close()
            with contextlib.suppress(OSError):
                os.unlink(server.server_address)  # type: ignore[arg-type]  # a Unix server's address: its socket's path
        self._unix = []

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def complete(self, trial: str, body: dict[str, Any], api: str = "chat", role: str | None = None) -> dict[str, Any]:
        """Run one chat request through the engine, record it, and answer in OpenAI's chat shape (the engine's
        whole message: content, tool calls, reasoning)."""
        _check(body)
        wv_start, started = self.weight_version, time.time()
        return self._record(trial, body, self.engine.chat(body, self.timeout_s), wv_start, started, api, role)

    def stream(
        self, trial: str, body: dict[str, Any], api: str = "chat", role: str | None = None
    ) -> Iterator[dict[str, Any]]:
        """The same request streamed: the engine's chat deltas as it streams them, then (the last item, with
        `object` "chat.completion") the whole reply as `complete` gives it, once recorded. An engine that
        streams nothing is asked once and its reply made into deltas (chat_wire.message_deltas)."""
        _check(body)
        wv_start, started = self.weight_version, time.time()
        if not hasattr(self.engine, "stream"):
            out = self._record(trial, body, self.engine.chat(body, self.timeout_s), wv_start, started, api, role)
            yield from message_deltas(out["choices"][0]["message"])
            yield out
            return
        for item in self.engine.stream(body, self.timeout_s):
            if isinstance(item, Generation):
                yield self._record(trial, body, item, wv_start, started, api, role)
                return
            yield item

    def _record(self, trial: str, body: dict[str, Any], gen: Generation, wv_start: int | None, started: float,
                api: str, role: str | None) -> dict[str, Any]:  # fmt: skip
        wv_end = gen.weight_version if gen.weight_version is not None else self.weight_version
        if gen.weight_version is not None and wv_start is None:
            wv_start = gen.weight_version
        model = gen.model or body.get("model") or ""
        message = dict(gen.message) if gen.message is not None else {"role": "assistant", "content": gen.text}
        finish = gen.finish_reason
        if message.get("tool_calls") and finish == "stop":  # a text engine's reply read as tool calls
            finish = "tool_calls"
        role = role or ("side" if body.get("model") in self.side_models else "policy")
        with self._lock:
            calls = self._calls.setdefault(trial, [])
            kept = {k: v for k, v in message.items() if v is not None}
            call = Call(trial=trial, index=len(calls), model=model, engine=self.engine.name, source=gen.source,
                        prompt_ids=gen.prompt_ids, completion_ids=gen.completion_ids, logprobs=gen.logprobs,
                        finish_reason=finish, wv_start=wv_start, wv_end=wv_end, started=started,
                        finished=time.time(), text=gen.text, message=kept, api=api, role=role)  # fmt: skip
            calls.append(call)
            if self.log is not None:
                with self.log.open("a") as fh:
                    fh.write(json.dumps(asdict(call)) + "\n")
        n_completion = len(gen.completion_ids)
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish,
                                  "token_ids": gen.completion_ids}  # fmt: skip
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


def _check(body: dict[str, Any]) -> None:
    if not isinstance(body.get("messages"), list) or not body["messages"]:
        raise UserError("a chat completion needs a non-empty messages list")


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    trial = ""  # the one trial every call on this socket is recorded under


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
            pinned = getattr(self.server, "trial", None)  # a sandbox's socket: every call is its trial's
            return (pinned or trial), path

        def _sandboxed(self, method: str, path: str) -> bool:
            """A sandbox's socket answers the model APIs and reads (GET /v1/models) only: no admin call (taking or
            rewriting its own record), no POST the gateway would pass to the engine unrecorded. On TCP, a gateway
            with a token answers only requests that carry it (access.py), admin calls included. True: refused."""
            if not isinstance(self.server, _UnixServer):
                if bearer_ok(self.headers.get("Authorization"), gw.token):
                    return False
                self._json(401, {"error": {"message": "this gateway needs its token: Authorization: Bearer TOKEN"}})
                return True
            recorded = ROUTES.get(path.split("?", 1)[0].rstrip("/")) is not None
            if path.startswith("/admin/") or (method == "POST" and not recorded):
                self._json(403, {"error": {"message": f"{method} {path.split('?', 1)[0]}: not from a sandbox"}})
                return True
            return False

        def _send(
            self, status: int, body: bytes, ctype: str = "application/json", extra: dict[str, str] | None = None
        ) -> None:
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

        def _json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
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
            if self._sandboxed("GET", path):
                return
            if path.startswith("/admin/calls/"):
                self._json(200, [asdict(c) for c in gw.calls(path.removeprefix("/admin/calls/"))])
            elif path == "/admin/weight_version":
                self._json(200, {"version": gw.weight_version})
            else:
                self._passthrough("GET", path, None)

        def do_POST(self) -> None:  # noqa: N802
            trial, path = self._split()
            raw = self._body()
            if self._sandboxed("POST", path):
                return
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
            api = ROUTES.get(path.split("?", 1)[0].rstrip("/"))
            if api is None:
                self._passthrough("POST", path, raw)
                return
            role = (self.headers.get(ROLE_HEADER) or "").strip().lower() or None
            if role not in (None, "policy", "side"):
                self._error(api, 400, f"{ROLE_HEADER} is policy or side, not {role!r}")
                return
            try:
                body = json.loads(raw)
                if not isinstance(body, dict):
                    raise UserError("the request body is a JSON object")
                passed = bool(body.get("stream"))  # streamed on as the engine streams it
                if api == "chat":
                    chat = body
                elif api == "responses":
                    chat = responses_api.responses_to_chat(body)
                else:
                    chat = messages_api.messages_to_chat(body)
                if passed:
                    items = gw.stream(trial, chat, api=api, role=role)
                    first = next(items)  # the engine's refusal comes before any byte is sent
                else:
                    out = gw.complete(trial, chat, api=api, role=role)
            except (ValueError, UserError) as exc:
                self._error(api, 400, str(exc))
                return
            except EngineHTTPError as exc:  # the engine's own refusal (a too-long prompt...) goes back as is
                self._send(exc.status, exc.text.encode())
                return
            except requests.RequestException as exc:
                self._error(api, 502, f"engine unreachable: {type(exc).__name__}")
                return
            if passed:
                self._stream(STREAMS[api](body, f"chatcmpl-{uuid.uuid4().hex[:12]}", int(time.time())),
                             itertools.chain([first], items))  # fmt: skip
                return
            wv = {} if out["weight_version"] is None else {WV_HEADER: str(out["weight_version"])}
            if api == "chat":
                self._json(200, out, wv)
            elif api == "responses":
                self._json(200, responses_api.response_from_chat(out, body), wv)
            else:
                self._json(200, messages_api.message_from_chat(out, body), wv)

        def _stream(self, wire: Any, items: Iterator[dict[str, Any]]) -> None:
            """A streamed reply in the client's wire API (`wire`: STREAMS), each of the engine's deltas sent on as
            it comes (chunked transfer), the closing events once the call is recorded. A client that hangs up
            does not stop the record: the rest of the engine's stream is still read."""
            alive = self._chunk(b"", start=True) and self._chunk(wire.encode(wire.start()))
            try:
                for item in items:
                    # the last item is the whole reply, recorded; the others the engine's deltas
                    events = wire.finish(item) if item.get("object") == "chat.completion" else wire.add(item)
                    alive = alive and self._chunk(wire.encode(events))
                alive = alive and self._chunk(wire.tail)
            except (ValueError, EngineHTTPError, requests.RequestException) as exc:  # the engine failed mid-stream
                error = {
                    "type": "error",
                    "error": {"type": "api_error", "message": f"engine stream failed: {type(exc).__name__}"},
                }
                alive = alive and self._chunk(f"event: error\ndata: {json.dumps(error)}\n\n".encode())
            if alive:
                self._chunk(b"", end=True)

        def _chunk(self, data: bytes, start: bool = False, end: bool = False) -> bool:
            """One piece of a chunked response (`start`: the headers); False once the client is gone."""
            try:
                if start:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                elif end:
                    self.wfile.write(b"0\r\n\r\n")
                elif data:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()
                return True
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
                return False

        def _error(self, api: str, status: int, message: str) -> None:
            if api == "messages":
                kind = "invalid_request_error" if status == 400 else "api_error"
                self._json(status, {"type": "error", "error": {"type": kind, "message": message}})
            else:
                self._json(status, {"error": {"message": message}})

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
    parser.add_argument(
        "--token",
        help=f"env:VAR or file:PATH: the token every request must carry (Authorization: Bearer); needed for a "
        f"non-loopback --host [env {TOKEN_ENV}]",
    )
    args = parser.parse_args(argv)
    try:
        token = server_token(args.token, args.host, "gateway")
        template = template_of(args.gguf) if args.gguf else None
        gw = Gateway(args.engine, chat_template=template, host=args.host, port=args.port, log=args.log, token=token)
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

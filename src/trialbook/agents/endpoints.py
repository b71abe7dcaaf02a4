"""OpenAI-compatible endpoints: least-outstanding-requests balancing, chat calls, engine probing.

Requests are spread over every `--endpoint` (e.g. one per inference engine of a training run): each call
goes to the endpoint with the fewest requests in flight (ties: the fewest sent so far). A refused
prompt that is too long is a ContextLengthError (the trial is still graded); an endpoint that
cannot be reached or answers 5xx is an EndpointError: an infra failure, retried, never graded 0.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import requests

from trialbook.errors import UserError
from trialbook.outcomes import ErrorKind
from trialbook.redact import is_secret_header, register, secret_value

# How servers word a prompt longer than the context window (llama.cpp, vLLM, SGLang, OpenAI).
CONTEXT_PATTERNS = re.compile(
    r"context.?length|context window|maximum context|exceed(s|ed)? (the )?(model'?s? )?context"
    r"|prompt is too long|too many tokens|input_ids.*longer than",
    re.IGNORECASE,
)


class EndpointError(Exception):
    """The model server is unreachable or failed (5xx): infra, retried (outcomes.POLICY)."""

    kind = ErrorKind.ENDPOINT


class EndpointAuthError(EndpointError):
    """The server answered 401 or 403: a key is missing or wrong. The same for every trial: never retried."""

    kind = ErrorKind.ENDPOINT_AUTH


class EndpointModelError(EndpointError):
    """The server does not serve the model asked for (404): the same for every trial, never retried."""

    kind = ErrorKind.ENDPOINT_MODEL


class ContextLengthError(Exception):
    """The server refused the prompt as longer than the model's context window."""


DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # as the OpenAI clients read it


def auth_headers(api_key_env: str | None, headers: dict[str, str] | None = None) -> dict[str, str]:
    """The headers every request carries: `headers` (--header), and `Authorization: Bearer KEY` with the key read
    from the environment variable `api_key_env` (default OPENAI_API_KEY, where it is set). The key itself is never
    stored: the run config keeps the variable's name only, and the key is registered for scrubbing (redact.py). A
    header whose name is a credential's (X-Api-Key, ...) is given as env:VAR or file:PATH and read here; an inline
    value is refused. A named variable that is not set is an error."""
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        out[name] = secret_value(value, f"--header {name}") if is_secret_header(name) else value
    name = api_key_env or DEFAULT_KEY_ENV
    key = register(os.environ.get(name))
    if api_key_env and not key:
        raise UserError(f"--api-key-env {api_key_env}: the environment variable {api_key_env} is not set")
    if key and "Authorization" not in out:
        out["Authorization"] = f"Bearer {key}"
    return out


def _auth_failure(url: str, status: int, headers: Mapping[str, str | bytes] | None) -> EndpointAuthError:
    sent = "a key was sent and refused" if headers and "Authorization" in headers else "no key was sent"
    return EndpointAuthError(
        f"{url} answered {status} ({'unauthorized' if status == 401 else 'forbidden'}): {sent}; give the key in an "
        f"environment variable, OPENAI_API_KEY or the one --api-key-env names"
    )


def normalize(url: str) -> str:
    """`http://host:port` or `.../v1/` -> `http://host:port/v1` (the OpenAI base URL)."""
    url = url.strip().rstrip("/")
    if not re.match(r"^https?://[^/]+", url):
        raise UserError(f"--endpoint must be an http(s) URL such as http://127.0.0.1:8000/v1, not '{url}'")
    return url if url.endswith("/v1") else f"{url}/v1"


@dataclass
class EngineInfo:
    """What the server says about itself (None where it does not say)."""

    engine: str | None
    engine_version: str | None
    models: list[str]
    context_window: int | None = None


def _get_json(url: str, timeout: float, headers: dict[str, str] | None = None, auth: bool = False) -> Any | None:
    """The JSON `url` answers, None where it does not answer 200 with JSON; `auth`: a 401/403 raises EndpointAuthError,
    an unreachable server EndpointError (the model list: what start-up reads first)."""
    try:
        resp = requests.get(url, timeout=timeout, headers=headers)
    except requests.RequestException as exc:
        if auth:
            raise EndpointError(f"{url} unreachable ({type(exc).__name__}); is the server up?") from None
        return None
    if auth and resp.status_code in (401, 403):
        raise _auth_failure(url, resp.status_code, headers)
    if resp.status_code != 200:
        if auth:
            raise EndpointError(f"{url} answered {resp.status_code}, not a model list: {resp.text[:200]}")
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def probe(base: str, timeout: float = 60.0, headers: dict[str, str] | None = None) -> EngineInfo:  # a busy server
    # answers late
    """Ask one endpoint for its models and its engine name/version.

    vLLM answers `/version`, SGLang `/get_server_info`, llama.cpp `/props`, llama-cpp-python names
    itself and its version in its OpenAPI document; every server names an owner in `/v1/models`.
    Raises EndpointError when `/v1/models` does not answer with a model list (EndpointAuthError on 401/403)."""
    models = _get_json(f"{base}/models", timeout, headers, auth=True)
    if not isinstance(models, dict) or not isinstance(models.get("data"), list):
        raise EndpointError(f"{base}/models did not answer with a model list; is it an OpenAI-compatible server?")
    data = [m for m in models["data"] if isinstance(m, dict)]
    root = base.removesuffix("/v1")
    owners = {str(m.get("owned_by")) for m in data if m.get("owned_by")}
    engine: str | None = owners.pop() if len(owners) == 1 else None
    version: str | None = None
    props: Any = None
    for path, name, key in (("/version", "vllm", "version"), ("/get_server_info", "sglang", "version")):
        body = _get_json(root + path, timeout, headers)
        if isinstance(body, dict) and isinstance(body.get(key), str):
            engine, version = (engine if engine not in (None, "me") else name), body[key]
            break
    else:
        props = _get_json(root + "/props", timeout, headers)
        api = _get_json(root + "/openapi.json", timeout, headers)
        info = api.get("info") if isinstance(api, dict) else None
        if isinstance(props, dict) and props.get("build_info"):
            engine, version = "llama.cpp", str(props["build_info"])
        elif isinstance(info, dict) and "llama.cpp python" in str(info.get("title", "")).lower():
            engine, version = "llama-cpp-python", str(info.get("version"))
    return EngineInfo(engine, version, [str(m.get("id")) for m in data], _context_window(data, props))


def _context_window(models: list[dict[str, Any]], props: Any) -> int | None:
    """The context window where the server says it: vLLM's `max_model_len` in its model list, llama.cpp's
    `default_generation_settings.n_ctx` in `/props`, llama-cpp-python's `meta.n_ctx_train` is the trained one (not
    read)."""
    for m in models:
        if isinstance(m.get("max_model_len"), int):
            return int(m["max_model_len"])
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    if isinstance(settings, dict) and isinstance(settings.get("n_ctx"), int):
        return int(settings["n_ctx"])
    return None


def first_model(base: str, headers: dict[str, str] | None = None) -> str:
    """The first model the server at `base` lists (an agent given no --model uses it)."""
    models = probe(base, headers=headers).models
    if not models:
        raise EndpointError(f"{base} lists no model; pass --model")
    return models[0]


@dataclass
class Endpoint:
    url: str
    in_flight: int = 0
    sent: int = 0
    failed: int = 0


@dataclass
class EndpointPool:
    """Least-outstanding-requests choice over several endpoints (thread-safe)."""

    urls: list[str]
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # the key: never printed
    endpoints: list[Endpoint] = field(init=False)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.urls:
            raise UserError("the mini agent needs at least one --endpoint URL (an OpenAI-compatible server)")
        self.urls = list(dict.fromkeys(normalize(u) for u in self.urls))
        self.endpoints = [Endpoint(u) for u in self.urls]

    @contextmanager
    def acquire(self) -> Iterator[Endpoint]:
        with self.lock:
            ep = min(self.endpoints, key=lambda e: (e.in_flight, e.sent))
            ep.in_flight += 1
            ep.sent += 1
        try:
            yield ep
        finally:
            with self.lock:
                ep.in_flight -= 1

    def counts(self) -> dict[str, int]:
        return {e.url: e.sent for e in self.endpoints}

    def chat(self, payload: dict[str, Any], timeout: float) -> tuple[dict[str, Any], str]:
        """POST /chat/completions to the least busy endpoint. Returns (response JSON, endpoint URL)."""
        with self.acquire() as ep:
            try:
                resp = requests.post(
                    f"{ep.url}/chat/completions", json=payload, timeout=max(timeout, 1.0), headers=self.headers
                )
            except requests.Timeout:
                raise TimeoutError(f"{ep.url} did not answer within {timeout:.0f} s") from None
            except requests.RequestException as exc:
                ep.failed += 1
                raise EndpointError(f"model endpoint {ep.url} unreachable: {type(exc).__name__}") from None
            return _checked(resp, ep), ep.url


def _checked(resp: requests.Response, ep: Endpoint) -> dict[str, Any]:
    text = resp.text[:500]
    if resp.status_code >= 500:
        if CONTEXT_PATTERNS.search(text):  # some servers answer an over-long prompt with 500
            raise ContextLengthError(text)
        ep.failed += 1
        raise EndpointError(f"model endpoint {ep.url} answered {resp.status_code}: {text}")
    if resp.status_code in (401, 403):
        raise _auth_failure(ep.url, resp.status_code, resp.request.headers if resp.request else None)
    if resp.status_code == 404 and "model" in text.lower():
        raise EndpointModelError(f"model endpoint {ep.url} answered 404: {text}")
    if resp.status_code != 200:
        if CONTEXT_PATTERNS.search(text):
            raise ContextLengthError(text)
        raise EndpointError(f"model endpoint {ep.url} refused the request ({resp.status_code}): {text}")
    try:
        body = resp.json()
    except ValueError:
        raise EndpointError(f"model endpoint {ep.url} answered with non-JSON: {text}") from None
    if not isinstance(body, dict) or not body.get("choices"):
        raise EndpointError(f"model endpoint {ep.url} answered without choices: {text}")
    return body

"""Endpoint balancing and error classification against real HTTP servers on 127.0.0.1.

The servers here answer in the documented shapes of vLLM and llama.cpp (those engines do not run
on this machine); the real llama-cpp-python server is exercised in test_agent_mini_llm.py.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from httpd import LocalServer
from trialbook.agents.base import agent_options
from trialbook.agents.endpoints import (
    ContextLengthError,
    EndpointError,
    EndpointPool,
    normalize,
    probe,
)
from trialbook.agents.llama import free_port
from trialbook.errors import UserError

Reply = tuple[int, Any]


class Server(LocalServer):
    """A real HTTP server whose replies come from `route(method, path) -> (status, json)`; counts hits."""

    def __init__(self, route: Callable[[str, str], Reply]) -> None:
        self.hits: list[str] = []

        def respond(method: str, path: str, _body: bytes) -> tuple[int, bytes]:
            self.hits.append(f"{method} {path}")
            status, body = route(method, path)
            return status, json.dumps(body).encode()

        super().__init__(respond)


CHAT_OK = {"choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}], "usage": {}}


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    made: list[Server] = []
    yield made
    for s in made:
        s.close()


def test_least_outstanding_requests(servers: list[Server]) -> None:
    release = threading.Event()

    def slow(method: str, path: str) -> Reply:
        release.wait(10)
        return 200, CHAT_OK

    a, b = Server(slow), Server(lambda m, p: (200, CHAT_OK))
    servers += [a, b]
    pool = EndpointPool([a.url, b.url])
    held = threading.Thread(target=pool.chat, args=({"messages": []}, 10))
    held.start()  # ties go to the first endpoint: A now has one request in flight
    for _ in range(20):
        if a.hits:
            break
        threading.Event().wait(0.05)
    used = [pool.chat({"messages": []}, 10)[1] for _ in range(3)]
    assert used == [b.url] * 3  # A is busy, so every request goes to B
    release.set()
    held.join(10)
    assert pool.counts() == {a.url: 1, b.url: 3}
    assert pool.chat({"messages": []}, 10)[1] == a.url  # both idle: the one sent fewer gets it
    assert len(a.hits) == 2 and len(b.hits) == 3


@pytest.mark.parametrize(
    "message",
    [
        "Requested tokens (2100) exceed context window of 2048",  # llama-cpp-python
        "This model's maximum context length is 2048 tokens. However, you requested 2300 tokens",  # vLLM/OpenAI
        "The input (5000 tokens) is longer than the model's context length (4096 tokens).",  # SGLang
    ],
)
def test_a_context_refusal_is_a_context_length_error(servers: list[Server], message: str) -> None:
    s = Server(lambda m, p: (400, {"error": {"message": message, "type": "invalid_request_error"}}))
    servers.append(s)
    with pytest.raises(ContextLengthError):
        EndpointPool([s.url]).chat({"messages": []}, 5)


@pytest.mark.parametrize("status, body", [(500, {"error": "CUDA out of memory"}), (200, {"no": "choices"})])
def test_server_failures_are_endpoint_errors(servers: list[Server], status: int, body: Any) -> None:
    s = Server(lambda m, p: (status, body))
    servers.append(s)
    pool = EndpointPool([s.url])
    with pytest.raises(EndpointError):
        pool.chat({"messages": []}, 5)
    assert pool.endpoints[0].in_flight == 0


def test_an_unreachable_endpoint_is_an_endpoint_error() -> None:
    pool = EndpointPool([f"http://127.0.0.1:{free_port()}"])
    with pytest.raises(EndpointError, match="unreachable"):
        pool.chat({"messages": []}, 5)
    assert pool.endpoints[0].failed == 1 and pool.endpoints[0].in_flight == 0


def test_probe_reads_the_engine_and_version_the_server_reports(servers: list[Server]) -> None:
    def vllm(method: str, path: str) -> Reply:
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "Qwen/Qwen3-8B", "owned_by": "vllm"}]}
        if path == "/version":
            return 200, {"version": "0.28.0"}
        return 404, {}

    s = Server(vllm)
    servers.append(s)
    info = probe(s.url)
    assert (info.engine, info.engine_version, info.models) == ("vllm", "0.28.0", ["Qwen/Qwen3-8B"])


def test_probe_of_a_dead_endpoint_fails_clearly() -> None:
    with pytest.raises(EndpointError, match="is the server up"):
        probe(f"http://127.0.0.1:{free_port()}/v1", timeout=2)


def test_urls_are_normalized_to_the_v1_base() -> None:
    assert normalize("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert normalize("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000/v1"
    with pytest.raises(UserError):
        normalize("127.0.0.1:8000")
    assert EndpointPool(["http://h:1", "http://h:1/v1"]).urls == ["http://h:1/v1"]


def test_llm_options_are_refused_for_other_agents() -> None:
    assert agent_options("mini", endpoints=["http://h:1"], model=None) == {"endpoints": ["http://h:1"]}
    assert agent_options("oracle", endpoints=None, model=None) == {}
    with pytest.raises(UserError, match="--endpoint, --max-turns"):
        agent_options("oracle", endpoints=["http://h:1"], max_turns=3)


def test_quickstart_takes_only_oracle_or_mini(cli) -> None:
    for args in (["--agent", "nop"], ["--endpoint", "http://127.0.0.1:1/v1"]):
        res = cli("quickstart", *args)
        assert res.exit_code == 2 and "oracle or mini" in res.stderr

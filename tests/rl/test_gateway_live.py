"""The model gateway (rl/gateway.py) in front of the real llama-cpp-python server with SmolLM2-135M: what it
records per call is the engine's own tokens, for an HTTP client it knows nothing about and for the `mini` agent
in real trials; weight versions per call; a client that re-tokenizes its history is caught by the audit.
(SkyRL's generator over the gateway: tests/rl/test_skyrl_generator.py.)"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.agents.llama import LlamaServer, model_file
from trialbook.ledger.store import Ledger
from trialbook.rl.gateway import WV_HEADER, Gateway, _render, template_of
from trialbook.rl.rollout import Rollouts
from trialbook.trajectory import ARTIFACT, Trajectory

pytestmark = [pytest.mark.llm]


@pytest.fixture(scope="module")
def llama() -> Iterator[LlamaServer]:
    with LlamaServer(n_ctx=2048) as server:
        yield server


@pytest.fixture(scope="module")
def gateway(llama: LlamaServer) -> Iterator[Gateway]:
    with Gateway(llama.url, chat_template=template_of(model_file())) as gw:
        yield gw


def _engine(llama: LlamaServer, path: str, payload: dict) -> dict:
    resp = requests.post(llama.url.removesuffix("/v1") + path, json=payload, timeout=120)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _chat(url: str, messages: list[dict], **extra) -> requests.Response:
    body = {"model": "smollm2-135m-instruct", "messages": messages, "max_tokens": 24, "temperature": 0, **extra}
    return requests.post(f"{url}/chat/completions", json=body, timeout=120)


def test_a_plain_http_client_gets_the_engines_own_tokens_and_weight_versions(llama: LlamaServer, gateway: Gateway):
    url = gateway.url_for("plain-1")
    gateway.set_weight_version(7)
    first_turn = [{"role": "system", "content": "Answer in one short line."},
                  {"role": "user", "content": "Name a fruit."}]  # fmt: skip
    first = _chat(url, first_turn)
    assert first.status_code == 200 and first.headers[WV_HEADER] == "7"
    reply = first.json()["choices"][0]["message"]["content"]
    # the trainer syncs weights between the turns (the admin endpoint, as an out-of-process trainer would)
    assert requests.post(url.removesuffix("/v1") + "/admin/weight_version", json={"version": 8}, timeout=5).ok
    second_turn = [*first_turn, {"role": "assistant", "content": reply}, {"role": "user", "content": "Another."}]
    second = _chat(url, second_turn, stream=True)  # a streaming client gets the reply as server-sent events
    assert second.status_code == 200 and second.text.rstrip().endswith("data: [DONE]")

    calls = gateway.calls("plain-1")
    assert [(c.index, c.wv_start, c.wv_end, c.source) for c in calls] == [
        (0, 7, 7, "engine-tokenizer"), (1, 8, 8, "engine-tokenizer")
    ]  # fmt: skip
    template = template_of(model_file())
    for call, messages in zip(calls, (first_turn, second_turn), strict=True):
        # the same generation asked of the engine directly: its pieces and counts are the recorded ids'
        prompt = _render(*template[:1], messages, *template[1:])
        direct = requests.post(f"{llama.url}/completions", timeout=120, json={
            "prompt": prompt, "max_tokens": 24, "temperature": 0, "logprobs": 1}).json()  # fmt: skip
        pieces = direct["choices"][0]["logprobs"]["tokens"]
        ids = call.completion_ids[: len(pieces)]
        assert [_engine(llama, "/extras/detokenize", {"tokens": [i]})["text"] for i in ids] == pieces
        assert direct["usage"]["prompt_tokens"] == len(call.prompt_ids)
        assert direct["usage"]["completion_tokens"] == len(pieces)
        assert direct["choices"][0]["text"] == call.text
        assert call.logprobs[: len(pieces)] == pytest.approx(direct["choices"][0]["logprobs"]["token_logprobs"])
        # the prompt ids are the engine's tokenization of the prompt it was given
        assert _engine(llama, "/extras/tokenize", {"input": prompt})["tokens"] == call.prompt_ids
    traj = Trajectory.from_calls(calls)
    assert traj.broken == [] and (traj.wv_first, traj.wv_last) == (7, 8)
    assert gateway.take("plain-1") == calls and gateway.calls("plain-1") == []


def test_a_client_that_rewrites_its_history_breaks_the_prefix(gateway: Gateway) -> None:
    url = gateway.url_for("rewrites-1")
    history = [{"role": "user", "content": "Say hello."}]
    reply = _chat(url, history).json()["choices"][0]["message"]["content"]
    # the client keeps the reply re-worded (as an agent that strips or re-renders history does)
    history += [{"role": "assistant", "content": " " + reply.upper() + " "}, {"role": "user", "content": "Again."}]
    assert _chat(url, history).status_code == 200
    assert Trajectory.from_calls(gateway.take("rewrites-1")).broken == [1]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tasks")
    shutil.copytree(EXAMPLES / "plain-bugfix", root / "plain-bugfix")
    return root


@pytest.mark.docker
def test_mini_trials_through_the_gateway_keep_their_exact_turns(cli, engine, db: str, gateway: Gateway,
                                                                 tasks: Path, tmp_path: Path) -> None:  # fmt: skip
    options = {"max_turns": 2, "max_output_tokens": 24}
    # 5 x the task's 60 s: on a loaded 2-core machine one call of the 135M model can take most of a minute
    rollouts = Rollouts(db, "w41-gw", tasks, gateway=gateway, agent_options=options, retries=0, runs_dir=tmp_path,
                        timeout_multiplier=5)  # fmt: skip
    gateway.set_weight_version(4)
    results = asyncio.run(rollouts.group("plain-bugfix", 2, step=5))
    ledger = Ledger(db)
    rows = {r["id"]: r for r in trial_dicts(ledger, "w41-gw")}
    for r in results:
        traj = Trajectory.loads(ledger.artifact(r.trial_id, ARTIFACT))
        assert traj.turns and traj.exact and r.wv == 4 == rows[r.trial_id]["wv"]
        extra = rows[r.trial_id]["extra"]
        assert extra["rollout"]["staleness"] == 1 and extra["rollout"]["turns"] == len(traj.turns)
        assert extra["rollout"]["prefix_breaks"] == len(traj.broken)
        # mini's own record of each call (the ids the gateway answered with) is the gateway's
        assert [t.completion_ids for t in traj.turns] == r.token_ids[: len(traj.turns)]
        assert len(traj.turns) == min(len(r.token_ids), 2)
        replies = _replies(ledger.artifact(r.trial_id, "trajectory.json"))
        eos = _engine_eos(gateway)
        for turn, text in zip(traj.turns, replies, strict=False):
            ids = turn.completion_ids[:-1] if turn.completion_ids[-1:] == [eos] else turn.completion_ids
            assert "".join(_piece(gateway, i) for i in ids) == text

    report = cli("train", "report", "w41-gw", "--bucket", "1", "--json")
    assert report.exit_code == 0, report.stderr
    tokens = json.loads(report.stdout)["tokens"]
    assert tokens["with_tokens"] == 2 and tokens["staleness_max"] == 1 and tokens["inexact_trials"] == 0


def _replies(trajectory_json: str) -> list[str]:
    """What the model said at each call, from mini's trajectory (a reply with no parseable action is kept
    on the format-error message that answered it)."""
    out = []
    for m in json.loads(trajectory_json)["messages"]:
        reply = (m.get("extra") or {}).get("model_reply")
        if reply is not None:
            out.append(reply)
        elif m["role"] == "assistant":
            out.append(m["content"])
    return out


def _piece(gateway: Gateway, token: int) -> str:
    return gateway.engine._detokenize(token, None, 30)  # type: ignore[attr-defined]


def _engine_eos(gateway: Gateway) -> int:
    return gateway.engine._bare(gateway.engine.eos, None, 30)[0]  # type: ignore[attr-defined]

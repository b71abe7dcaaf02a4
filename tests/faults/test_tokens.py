"""Who may talk to `trialbook serve` and the model gateway (access.py), with the real servers on this machine: a
non-loopback bind without a token is refused (exit 2, one line); with a token every request needs it (Bearer, or a
browser's cookie for serve), admin calls included; and secrets given as env:VAR or file:PATH (redact.py) are
scrubbed from what is written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from starlette.testclient import TestClient

from httpd import LocalServer
from trialbook import redact
from trialbook.access import bearer_ok, server_token
from trialbook.agents.endpoints import auth_headers
from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.ledger.views import open_readonly
from trialbook.records import Run
from trialbook.rl.gateway import Gateway
from trialbook.web.app import create_app

TOKEN = "tb-token-5f1c2e9a7d"
CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=60, env=env)


def test_serve_on_a_public_address_without_a_token_exits_2(tmp_path: Path) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRIALBOOK_TOKEN"}
    db = tmp_path / "l.db"
    Ledger(str(db))
    proc = _cli("serve", "--db", str(db), "--host", "0.0.0.0", "--port", "0", env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "needs a token" in proc.stderr and "Traceback" not in proc.stderr
    inline = _cli("serve", "--db", str(db), "--host", "0.0.0.0", "--token", TOKEN, env=env)  # a value, not a source
    assert inline.returncode == 2 and "env:VAR or file:PATH" in inline.stderr and TOKEN not in inline.stderr


def test_a_token_is_required_then_served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "l.db"
    ledger = Ledger(str(db))
    with ledger.transaction() as conn:
        ledger.create_run(conn, Run(name="r1", kind="eval"))
    monkeypatch.setenv("SERVE_TOKEN", TOKEN)
    token = server_token("env:SERVE_TOKEN", "0.0.0.0", "serve")
    assert token == TOKEN
    client = TestClient(create_app(open_readonly(str(db)), token))
    for path in ("/", "/runs/r1", "/nowhere", "/training/live.json?run=r1"):
        res = client.get(path)
        assert res.status_code == 401 and "r1" not in res.text, path
    assert client.get("/", headers={"Authorization": "Bearer wrong-token-1"}).status_code == 401
    ok = client.get("/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 200 and ">r1</a>" in ok.text and TOKEN not in ok.text
    browser = TestClient(create_app(open_readonly(str(db)), token))
    first = browser.get(f"/runs/r1?token={TOKEN}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/runs/r1"
    assert browser.get("/runs/r1").status_code == 200  # the cookie from then on


@pytest.fixture()
def engine() -> Iterator[LocalServer]:
    server = LocalServer(lambda method, path, body: (200, b'{"data": [{"id": "m"}]}'))
    yield server
    server.close()


def test_gateway_refuses_a_public_bind_and_then_needs_its_token(
    engine: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRIALBOOK_TOKEN", raising=False)
    with pytest.raises(UserError, match="needs a token"):
        Gateway(engine.url, engine_kind="vllm", host="0.0.0.0").start()
    proc = subprocess.run([sys.executable, "-m", "trialbook.rl.gateway", "--engine", engine.url, "--host", "0.0.0.0",
                           "--port", "0"], capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (
        proc.returncode == 2
        and proc.stderr.startswith("error: gateway --host 0.0.0.0")
        and proc.stderr.count("\n") == 1
    )
    monkeypatch.setenv("TRIALBOOK_TOKEN", TOKEN)
    with Gateway(engine.url, engine_kind="vllm", host="0.0.0.0") as gw:
        root = f"http://127.0.0.1:{gw.port}"
        assert requests.post(f"{root}/admin/weight_version", json={"version": 5}, timeout=10).status_code == 401
        assert gw.weight_version is None
        assert requests.get(f"{root}/v1/models", timeout=10).status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        res = requests.post(f"{root}/admin/weight_version", json={"version": 5}, headers=bearer, timeout=10)
        assert res.status_code == 200 and gw.weight_version == 5
        models = requests.get(f"{root}/v1/models", headers=bearer, timeout=10)  # passed on to the engine
        assert models.status_code == 200 and models.json()["data"][0]["id"] == "m"
        assert "Authorization" not in engine.headers[-1]  # the gateway's token is not sent on


def test_secret_headers_come_from_the_environment_or_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert bearer_ok(None, None) and not bearer_ok("Bearer x", "y") and bearer_ok(f"bearer {TOKEN}", TOKEN)
    with pytest.raises(UserError, match="never inline"):
        auth_headers(None, {"X-Api-Key": "sk-inline-value-123"})
    monkeypatch.setenv("HDR_KEY", "hdr-secret-0042aa")
    keyfile = tmp_path / "key"
    keyfile.write_text("file-secret-77b1\n")
    out = auth_headers(None, {"X-Api-Key": "env:HDR_KEY", "X-Other-Token": f"file:{keyfile}", "X-Team": "blue"})
    assert out == {"X-Api-Key": "hdr-secret-0042aa", "X-Other-Token": "file-secret-77b1", "X-Team": "blue"}
    with pytest.raises(UserError, match="NOPE is not set"):
        auth_headers(None, {"X-Api-Key": "env:NOPE"})
    text = redact.scrub(json.dumps({"log": "sent hdr-secret-0042aa and file-secret-77b1"}))
    assert "secret" not in re.sub(r"\[redacted\]", "", text) and text.count(redact.REDACTED) == 2

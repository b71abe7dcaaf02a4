"""A planted key never lands on disk or in a page: a mini-agent trial in Docker against a real OpenAI-compatible
server on 127.0.0.1 that requires two credentials (the Bearer key from --api-key-env, and a secret header given as
env:VAR) and whose replies repeat the key (in the thought and in the command the agent runs, so the transcript, the
command's output and the patch all carry it). The ledger file, the runs folder, an export, the command's own lines
and every `serve` page are searched for both: nowhere."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from httpd import LocalServer
from trialbook.ledger.store import Ledger
from trialbook.ledger.views import open_readonly
from trialbook.web.app import create_app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
KEY = "sk-planted-7c1e0b9d44aa"
HEADER_KEY = "hk-planted-31f0e2d8"


class LeakyModel(LocalServer):
    """401 without both credentials; its replies quote the key, then run `echo KEY > leak.txt` and submit."""

    def __init__(self) -> None:
        self.calls = 0

        def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            headers = self.request_headers()
            if headers.get("Authorization") != f"Bearer {KEY}" or headers.get("X-Api-Key") != HEADER_KEY:
                return 401, json.dumps({"error": {"message": "invalid api key"}}).encode()
            if method == "GET" and path == "/v1/models":
                return 200, json.dumps({"data": [{"id": "served-model"}]}).encode()
            request = json.loads(body)
            if request.get("max_tokens") == 1:
                return 200, json.dumps(
                    {"choices": [{"message": {"content": "OK"}, "finish_reason": "length"}]}
                ).encode()
            self.calls += 1
            command = f"echo {KEY} > leak.txt && cat leak.txt" if self.calls == 1 else (
                "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")  # fmt: skip
            content = f"THOUGHT: my key is {KEY}.\n\n```mswea_bash_command\n{command}\n```"
            reply: dict[str, Any] = {"choices": [{"message": {"role": "assistant", "content": content},
                                                  "finish_reason": "stop"}],
                                     "usage": {"prompt_tokens": 40, "completion_tokens": 9}}  # fmt: skip
            return 200, json.dumps(reply).encode()

        super().__init__(respond)


def _leaks(data: bytes) -> list[str]:
    return [k for k in (KEY, HEADER_KEY) if k.encode() in data]


@pytest.mark.docker
def test_a_planted_key_is_nowhere(cli, db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANTED_KEY", KEY)
    monkeypatch.setenv("PLANTED_HEADER", HEADER_KEY)
    server = LeakyModel()
    runs = tmp_path / "runs"
    try:
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", server.url, "--run", "keyed",
                  "--task", "plain-bugfix", "--retries", "0", "--runs-dir", str(runs), "-c", "actions=text",
                  "--api-key-env", "PLANTED_KEY", "--header", "X-Api-Key=env:PLANTED_HEADER")  # fmt: skip
    finally:
        server.close()
    assert res.exit_code == 0, res.stderr
    assert server.calls == 2  # the trial did reach the model, with both credentials
    assert not _leaks((res.stdout + res.stderr).encode())
    ledger = Ledger(db)
    trial = next(ledger.trial_rows(ledger.get_run("keyed").id))
    log = ledger.artifact(trial.id, "agent.log") or ""
    assert "my key is [redacted]" in log  # the reply was recorded, the key in it scrubbed
    assert ledger.get_run("keyed").config["agent_options"]["headers"] == {"X-Api-Key": "env:PLANTED_HEADER"}
    for path in Path(db).parent.glob(Path(db).name + "*"):  # the file, its -wal and -shm
        assert not _leaks(path.read_bytes()), path
    files = [p for p in runs.rglob("*") if p.is_file()]
    assert files and not [p for p in files if _leaks(p.read_bytes())]
    export = tmp_path / "keyed.jsonl"
    assert cli("export", "keyed", "--jsonl", str(export)).exit_code == 0
    assert export.stat().st_size > 0 and not _leaks(export.read_bytes())
    client = TestClient(create_app(open_readonly(db)))
    pages = ["/", "/runs/keyed", f"/trials/{trial.id}", "/task?id=plain-bugfix", "/audit?run=keyed"]
    seen = set()
    while pages:  # every page of the run, and every page they link to on this server
        page = pages.pop()
        if page in seen:
            continue
        seen.add(page)
        res = client.get(page)
        assert not _leaks(res.content), page
        pages += [p for p in re.findall(r'href="(/[^"#]*)"', res.text) if p.startswith(("/runs", "/trials", "/task"))]
    assert f"/trials/{trial.id}" in seen and len(seen) >= 4

"""The live training page of `serve` (/training/live and its JSON), in process: the same state and alerts as
`train watch`, its script allowed by this page's CSP alone, and bad input as one-line 4xx pages."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from trialbook.importers.replay import replay
from trialbook.ledger.store import Ledger
from trialbook.ledger.views import open_readonly
from trialbook.records import Run
from trialbook.training.sim_rollouts import RolloutConfig, generate
from trialbook.web.app import create_app


@pytest.fixture
def sim(tmp_path: Path) -> tuple[Path, Path, list[int]]:
    roll, steps = tmp_path / "roll.jsonl", tmp_path / "steps.jsonl"
    truth = generate(RolloutConfig(pool=64, epochs=2, incomplete=16), roll, steps)
    return roll, steps, truth.stall_steps


def test_live_page_follows_a_run_being_written(tmp_path: Path, sim: tuple[Path, Path, list[int]]) -> None:
    roll, steps, (stall,) = sim
    db = str(tmp_path / "live.db")
    ledger = Ledger(db)
    with ledger.transaction() as conn:
        ledger.create_run(conn, Run(name="live", kind="train", config={"staleness": 3}))
    client = TestClient(create_app(open_readonly(db)))
    page = client.get("/training/live?run=live")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert '<script src="/static/live.js"></script>' in page.text and 'id="alerts"' in page.text
    js = client.get("/static/live.js")
    assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
    assert "textContent" in js.text and "innerHTML" not in js.text  # values go in as text
    assert "script-src" not in client.get("/").headers["content-security-policy"]  # no other page runs scripts
    empty = client.get("/training/live.json?run=live").json()
    assert empty["state"]["current_step"] is None and empty["alerts"] == []
    writer = threading.Thread(target=replay, args=(ledger, roll, steps, "live", 4000.0), kwargs={"create": False})
    writer.start()
    seen_steps = set()
    while writer.is_alive():
        d = client.get("/training/live.json?run=live").json()
        seen_steps.add(d["state"]["current_step"])
    writer.join()
    d = client.get("/training/live.json?run=live").json()
    assert len(seen_steps) > 2  # the state changed while the run was written
    drains = [a for a in d["alerts"] if a["rule"] == "epoch_boundary_drain"]
    assert [a["details"]["stalled_step"] for a in drains] == [stall]
    assert d["state"]["current_step"] == 8 and d["state"]["max_staleness"] == 3
    html = client.get("/training/live?run=live").text
    assert 'data-rule="epoch_boundary_drain"' in html and "SLOW (epoch boundary)" in html


def test_live_page_bad_input(tmp_path: Path, sim: tuple[Path, Path, list[int]]) -> None:
    ledger = Ledger(str(tmp_path / "l.db"))
    with ledger.transaction() as conn:
        ledger.create_run(conn, Run(name="r", kind="train"))
    client = TestClient(create_app(open_readonly(str(tmp_path / "l.db"))))
    assert client.get("/training/live?run=nope").status_code == 404
    assert client.get("/training/live.json?run=r&bucket=x").status_code == 400
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/other.js").status_code == 404

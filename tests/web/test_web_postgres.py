"""`trialbook serve` over a PostgreSQL ledger: the same pages, in read-only transactions."""

from __future__ import annotations

import pytest
import webledger
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError
from starlette.testclient import TestClient
from webledger import EVAL_RUNS

from trialbook.ledger.views import open_readonly
from trialbook.web.app import create_app

pytestmark = pytest.mark.postgres


def test_pages_over_postgres_and_no_write_gets_through(pg: str) -> None:
    from paths import INSTANCES, RESULTS

    for name in EVAL_RUNS[1:3]:
        webledger.tb("import", "swebench", str(RESULTS / f"{name}.json"), "--instances", str(INSTANCES), "--db", pg)
    ledger = open_readonly(pg)
    client = TestClient(create_app(ledger, warm=False))
    runs = client.get("/").text
    assert all(f">{n}</a>" in runs for n in EVAL_RUNS[1:3]) and "22.4%" in runs
    assert "resolved 112/500 judged = 22.4%" in client.get(f"/runs/{EVAL_RUNS[1]}").text
    page = client.get("/compare", params={"base": EVAL_RUNS[1], "cand": EVAL_RUNS[2]}).text
    assert 'id="forest-plot"><svg' in page and "87/36/377" in page
    assert client.get("/?name=gpt_").status_code == 200  # LIKE wildcards in a filter are literal
    with pytest.raises(SQLAlchemyError, match="read-only transaction"), ledger.engine.connect() as conn:
        conn.execute(text("CREATE TABLE sneaky (a int)"))

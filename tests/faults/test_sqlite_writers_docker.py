"""Fault (b): three `trialbook run` processes write one SQLite ledger at once (concurrency 2 each) while a reader
(`serve`'s pages and the integrity check) reads it: every run completes, and no read ever sees a half-written trial
(a trial row without its verifier log, a summary that disagrees with its rows, any ledger check problem)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from faultkit import assert_whole, oracle_run, tb
from sqlalchemy import text
from starlette.testclient import TestClient

from trialbook.ledger.integrity import check
from trialbook.ledger.store import Ledger
from trialbook.ledger.views import open_readonly
from trialbook.web.app import create_app

RUNS, ATTEMPTS = ("w1", "w2", "w3"), 2
WITHOUT_LOG = "SELECT count(*) FROM trials t WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.trial_id = t.id" \
              " AND a.name = 'verifier.log')"  # fmt: skip


@pytest.mark.docker
def test_three_runs_and_a_reader_on_one_sqlite_ledger(db: str, tmp_path: Path) -> None:
    Ledger(db)  # created once, before the writers race to create it
    runs = [tb(*oracle_run(name, db, tmp_path / "runs", ATTEMPTS, 2)) for name in RUNS]
    stop, seen, problems = threading.Event(), [0], []

    def read() -> None:
        client = TestClient(create_app(open_readonly(db)))
        ledger = Ledger(db, create=False, reads_only=True)
        while not stop.is_set():
            result = check(ledger)
            problems.extend(result.problems)
            with ledger.engine.connect() as conn:
                problems.extend(["a trial without its verifier log"] * conn.execute(text(WITHOUT_LOG)).scalar_one())
            for name in RUNS:
                status = client.get(f"/runs/{name}").status_code
                if status not in (200, 404):  # 404: that run not created yet
                    problems.append(f"/runs/{name}: {status}")
            seen[0] += 1

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        codes = [run.wait(300) for run in runs]
    finally:
        stop.set()
        for run in runs:
            run.kill()
        reader.join(60)
    assert codes == [0, 0, 0], [run.err for run in runs]
    assert not problems, problems[:5]
    assert seen[0] >= 3  # the reader did read while they wrote
    for name in RUNS:
        assert_whole(db, name, ATTEMPTS)

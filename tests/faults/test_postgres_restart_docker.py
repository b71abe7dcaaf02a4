"""Fault (a): the PostgreSQL ledger restarts while a run writes to it (a server of the test's own, restarted with
pg_ctl; the shared test server is left alone). The run waits for it with one line saying so and completes: every
trial recorded once, the ledger check passes, no container left."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from faultkit import OwnPostgres, assert_whole, oracle_run, recorded, tb, wait_for

ATTEMPTS = 6


@pytest.fixture()
def own_pg() -> Iterator[OwnPostgres]:
    server = OwnPostgres()
    yield server
    server.close()


@pytest.mark.docker
@pytest.mark.postgres
def test_a_run_outlives_a_restart_of_its_postgresql_ledger(own_pg: OwnPostgres, tmp_path: Path) -> None:
    run = tb(*oracle_run("pgr", own_pg.url, tmp_path / "runs", ATTEMPTS, 2), env={"TRIALBOOK_LEDGER_WAIT_S": "90"})
    try:
        wait_for(lambda: recorded(own_pg.url, "pgr") >= 1, 120, "the first trial in the ledger")
        own_pg.stop()  # down until the run has met it: the next finished trial waits for the ledger
        wait_for(lambda: run.saw("connection lost"), 120, "the run's line saying it waits for the ledger")
        time.sleep(2)
        own_pg.start()
        assert run.wait(300) == 0, run.err
    finally:
        run.kill()
    (line,) = [line for line in run.lines if "connection lost" in line]  # said once
    assert line.startswith("warning: ledger postgresql") and "waiting up to 90s for the database" in line
    assert_whole(own_pg.url, "pgr", ATTEMPTS)

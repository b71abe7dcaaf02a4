"""compare / plan / pass@k on a real PostgreSQL ledger (started by scripts/ci-setup-postgres.sh)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError

from trialbook.ledger.schema import metadata
from trialbook.ledger.store import resolve_db
from trialbook.stats.synthetic import anchor_runs, write_jsonl

DBNAME = "trialbook_stats_test"
PG = os.environ.get("TRIALBOOK_TEST_PG", "postgresql://trialbook:trialbook@127.0.0.1:5432/trialbook_test")


@pytest.fixture
def pg() -> str:
    """A database of its own on the CI server, so other tests' drop_all on trialbook_test cannot race it."""
    url = make_url(resolve_db(PG))
    try:
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :d"), {"d": DBNAME}).first():
                conn.execute(text(f"CREATE DATABASE {DBNAME}"))
        admin.dispose()
    except OperationalError as exc:
        pytest.fail(f"no PostgreSQL at {PG}: run scripts/ci-setup-postgres.sh ({str(exc.orig).splitlines()[0]})")
    mine = url.set(database=DBNAME)
    engine = create_engine(mine)
    with engine.begin() as conn:
        metadata.drop_all(conn)
    engine.dispose()
    return mine.render_as_string(hide_password=False).replace("postgresql+psycopg://", "postgresql://")


def test_anchor_on_postgres_equals_sqlite(cli, pg, tmp_path):
    base, cand = anchor_runs()
    results = {}
    for target in (pg, None):
        extra = ("--db", pg) if target else ()
        for name, lines in (("base", base), ("cand", cand)):
            path = write_jsonl(tmp_path / f"{name}.jsonl", lines)
            r = cli("import", "jsonl", str(path), "--run", name, *extra, use_db=target is None)
            assert r.exit_code == 0, r.stderr
        r = cli("compare", "base", "cand", "--by-repo", "--json", *extra, use_db=target is None)
        assert r.exit_code == 0, r.stderr
        results[target or "sqlite"] = json.loads(r.stdout)
        show = json.loads(cli("show", "cand", "--json", *extra, use_db=target is None).stdout)
        assert show["pass_at_k"]["pass@1"] == pytest.approx(59.1)
    assert results[pg] == results["sqlite"]
    (row,) = results[pg]["comparisons"]
    assert row["diff_pp"] == pytest.approx(2.70) and row["ci_pp"] == pytest.approx([-0.15, 5.55], abs=0.01)
    assert np.isclose(row["se_pp"], 1.449, atol=5e-4)

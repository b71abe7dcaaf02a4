"""regrade, audit and attribute give the same answers on PostgreSQL as on SQLite
(server started by scripts/ci-setup-postgres.sh)."""

from __future__ import annotations

import json

from paths import TEST_DATA

FIXTURES = TEST_DATA / "audit"


def _answers(cli, db: str) -> list[dict]:
    def call(*args: str) -> dict:
        res = cli(*args, "--db", db, use_db=False)
        assert res.exit_code == 0, res.stderr
        return json.loads(res.stdout) if res.stdout.strip() else {}

    for run in ("run_a", "run_b"):
        call("import", "swebench", str(FIXTURES / run / "results.json"), "--instances",
             str(FIXTURES / "instances.jsonl"), "--logs", str(FIXTURES / run), "--run", run[-1])  # fmt: skip
    return [
        call("regrade", "a", "--json"),
        call("regrade", "b", "--json"),
        call("audit", "a", "--vs", "b", "--json"),
        call("attribute", "a", "b", "--json"),
    ]


def test_same_answers_on_postgres_and_sqlite(cli, pg, db):
    on_pg = _answers(cli, pg)
    on_sqlite = _answers(cli, db)
    assert on_pg == on_sqlite
    regrade_b, audit_a, attribute = on_pg[1], on_pg[2], on_pg[3]
    assert regrade_b["disagreements"][0]["task_id"] == "pallets__flask-90005"
    assert audit_a["explained_by_artifacts"]["p2p_penalties"] == 2
    assert attribute["net"] == 1  # b resolves 90004 and 90005 (as recorded), a only 90009

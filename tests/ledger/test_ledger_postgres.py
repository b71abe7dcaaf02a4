"""The same ledger code on a real PostgreSQL server (started by scripts/ci-setup-postgres.sh)."""

from __future__ import annotations

import json

from paths import INSTANCES, RESULTS


def test_import_show_and_rollback_on_postgres(cli, pg, tmp_path):
    sweagent = RESULTS / "20240620_sweagent_claude3.5sonnet.json"
    res = cli(
        "import", "swebench", str(sweagent), "--instances", str(INSTANCES), "--run", "s", "--db", pg, use_db=False
    )
    assert res.exit_code == 0, res.stderr
    s = json.loads(cli("show", "s", "--json", "--db", pg, use_db=False).stdout)
    assert (s["trials"], s["judged"], s["resolved"], s["resolved_pct"]) == (500, 500, 168, 33.6)
    assert s["tags"] == {"no_generation": 11, "no_logs": 3}

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "resolved": true}\n{"task_id": "b", "outcome": "nope"}\n')
    res = cli("import", "jsonl", str(bad), "--run", "bad", "--db", pg, use_db=False)
    assert res.exit_code == 2 and "line 2" in res.stderr
    names = [r["name"] for r in json.loads(cli("runs", "--json", "--db", pg, use_db=False).stdout)]
    assert names == ["s"]

    out = tmp_path / "s.jsonl"
    assert cli("export", "s", "--jsonl", str(out), "--db", pg, use_db=False).exit_code == 0
    assert cli("import", "jsonl", str(out), "--run", "s2", "--db", pg, use_db=False).exit_code == 0
    out2 = tmp_path / "s2.jsonl"
    assert cli("export", "s2", "--jsonl", str(out2), "--db", pg, use_db=False).exit_code == 0
    assert out.read_bytes() == out2.read_bytes()


def test_v3_ledger_migrates_to_v4_on_postgres(cli, pg, tmp_path):
    """The covering indexes of schema v4 arrive in one transaction on PostgreSQL too (issue 16), and v5 after."""
    import psycopg

    from trialbook.ledger import schema
    from trialbook.ledger.store import Ledger

    rows = tmp_path / "t.jsonl"
    rows.write_text("".join(json.dumps({"task_id": f"o__r-{i % 3}", "resolved": i % 2 == 0}) + "\n" for i in range(9)))
    assert cli("import", "jsonl", str(rows), "--run", "old", "--db", pg, use_db=False).exit_code == 0
    new = sorted(i.name for i in schema.SUMMARY_INDEXES)

    def state() -> tuple[str, list[str]]:
        with psycopg.connect(pg) as conn:
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
            names = [r[0] for r in conn.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'trials'")]
        return version, sorted(set(new) & set(names))

    with psycopg.connect(pg) as conn:  # back to what a v3 ledger was, plus a stray table the upgrade trips on
        for name in new:
            conn.execute(f"DROP INDEX {name}")
        conn.execute("DROP TABLE run_summary")
        conn.execute("DROP TABLE run_stats")
        conn.execute("DROP TABLE run_tasks")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        conn.execute("CREATE TABLE run_stats (x integer)")
    assert cli("runs", "--db", pg, use_db=False).exit_code != 0
    assert state() == ("3", [])
    with psycopg.connect(pg) as conn:
        conn.execute("DROP TABLE run_stats")
    Ledger(pg)
    assert state() == (str(schema.SCHEMA_VERSION), new)
    assert json.loads(cli("show", "old", "--json", "--db", pg, use_db=False).stdout)["trials"] == 9

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

"""`train report` on a real PostgreSQL ledger (scripts/ci-setup-postgres.sh) equals the SQLite one."""

from __future__ import annotations

import json


def test_train_report_on_postgres_equals_sqlite(cli, pg, tmp_path):
    traj, steps = tmp_path / "traj.jsonl", tmp_path / "steps.jsonl"
    res = cli("sim", "rollouts", "--out", str(traj), "--steps-out", str(steps), "--pool", "80", "--epochs", "3",
              "--seed", "2", use_db=False)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    reports = {}
    for target in (pg, None):
        extra = ("--db", pg) if target else ()
        kw = {"use_db": target is None}
        assert cli("import", "jsonl", str(traj), "--run", "rl", "--kind", "train", *extra, **kw).exit_code == 0
        assert cli("import", "steps", str(steps), "--run", "rl", *extra, **kw).exit_code == 0
        r = cli("train", "report", "rl", "--gpus", "8", "--json", *extra, **kw)
        assert r.exit_code == 0, r.stderr
        reports[target or "sqlite"] = json.loads(r.stdout)
    assert reports[pg] == reports["sqlite"]
    assert reports[pg]["stalls"]["slow_steps"] and reports[pg]["encounters"]
    assert any(b["outcome_pct"]["p2p_regression"] for b in reports[pg]["buckets"])

"""compare / plan / pass@k on a real PostgreSQL ledger (started by scripts/ci-setup-postgres.sh)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trialbook.stats.synthetic import anchor_runs, write_jsonl


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

"""compare / plan / pass@k on a real PostgreSQL ledger (started by scripts/ci-setup-postgres.sh)."""

from __future__ import annotations

import json

import pytest

from paths import HARBOR_JOBS
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
    # the adjusted interval at 500 tasks (stats/kernel.py; scipy's t gives [-0.15, +5.55])
    assert row["diff_pp"] == pytest.approx(2.70) and row["ci_pp"] == pytest.approx([-0.15, 5.53], abs=0.01)
    assert round(row["se_pp"], 2) == 1.45  # the augmented sample's SE (the seed's plain SE: 1.449), as printed


def test_mean_reward_compare_and_sensitivity_on_postgres_equal_sqlite(cli, pg, tmp_path):
    base = [{"task_id": f"t{i}", "reward": round(0.02 * i, 2)} for i in range(40)]
    cand = [{"task_id": f"t{i}", "reward": round(0.9 - 0.02 * i, 2)} for i in range(34)]
    cand += [{"task_id": f"t{i}", "outcome": "verifier_timeout"} for i in range(34, 40)]
    results = {}
    for target in (pg, None):
        extra = ("--db", pg) if target else ()
        for job in ("gpt52-codex-stacked-v2", "sonnet46-stacked-v2"):
            assert cli("import", "harbor", str(HARBOR_JOBS / job), *extra, use_db=target is None).exit_code == 0
        for name, lines in (("base", base), ("cand", cand)):
            path = write_jsonl(tmp_path / f"{name}.jsonl", lines)
            assert cli("import", "jsonl", str(path), "--run", name, *extra, use_db=target is None).exit_code == 0
        got = []
        for runs in (("gpt52-codex-stacked-v2", "sonnet46-stacked-v2"), ("base", "cand")):
            for metric in ("reward", "resolved"):
                r = cli("compare", *runs, "--metric", metric, "--json", *extra, use_db=target is None)
                assert r.exit_code == 0, r.stderr
                got.append(json.loads(r.stdout))
        results[target or "sqlite"] = got
    assert results[pg] == results["sqlite"]
    harbor, harbor_resolved, small, _ = results[pg]
    assert harbor["comparisons"][0]["diff_pp"] == pytest.approx(14.995, abs=1e-3)
    assert any("'gpt52-codex-stacked-v2' 2, 'sonnet46-stacked-v2' 2" in w for w in harbor_resolved["warnings"])
    assert small["sensitivity"]["ungraded_trials"] == {"base": 0, "cand": 6}
    v = small["sensitivity"]["verdicts"]["cand"]
    assert v["as_failures"]["diff_pp"] < v["dropped"]["diff_pp"] < v["as_successes"]["diff_pp"]

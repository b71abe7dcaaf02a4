"""`train report --metric reward`: a training run's partial rewards as mean reward, per weight-version
bucket (with the task-clustered interval of statsmodels), per pass and per same-task encounter; under
the default `--metric resolved` a partial reward counts 0 and a warning gives their count."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm

from smallsample import adjusted_pp

REWARDS = (0.0, 0.25, 0.5, 0.75, 1.0)


def _partial_run(seed: int = 3, tasks: int = 40, epochs: int = 3, rollouts: int = 4) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for e in range(epochs):
        for t in range(tasks):
            for _ in range(rollouts):
                row = {"task_id": f"org__repo-{t}", "step": e * 10 + 1, "wv": e * 10, "epoch": e}
                if rng.random() < 0.05:
                    row["outcome"] = "verifier_timeout"  # ungraded: in no mean
                else:
                    row["reward"] = float(rng.choice(REWARDS, p=[0.3, 0.2, 0.2, 0.1, 0.2]))
                rows.append(row)
    return rows


@pytest.fixture
def partial_run(cli, tmp_path: Path) -> list[dict]:
    rows = _partial_run()
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(path), "--run", "rl", "--kind", "train").exit_code == 0
    return rows


def _report(cli, *args: str) -> dict:
    res = cli("train", "report", "rl", *args, "--json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_mean_reward_per_bucket_pass_and_encounter(cli, partial_run):
    report = _report(cli, "--metric", "reward", "--bucket", "10")
    assert report["metric"] == "reward" and report["warnings"] == []
    graded = [r for r in partial_run if "reward" in r]
    assert report["pass_pct"] == pytest.approx(100 * np.mean([r["reward"] for r in graded]), abs=0.01)
    for b in report["buckets"]:
        mine = [r for r in graded if b["wv_from"] <= r["wv"] <= b["wv_to"]]
        y = np.array([r["reward"] for r in mine])
        groups = np.unique([r["task_id"] for r in mine], return_inverse=True)[1]
        fit = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
        lo, hi = fit.conf_int(0.05)[0]
        assert b["judged"] == len(y) and b["pass_pct"] == pytest.approx(100 * y.mean(), abs=0.01)
        assert b["ci_pct"] == pytest.approx([100 * lo, 100 * hi], abs=0.01)
    for p in report["passes"]:
        y = [r["reward"] for r in graded if r["epoch"] == p["pass"]]
        assert p["pass_pct"] == pytest.approx(100 * np.mean(y), abs=0.01)
    cells: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in graded:
        cells[r["task_id"]][r["epoch"]].append(r["reward"])
    for row in report["encounters"]:
        k = row["k"]
        d = [np.mean(ep[k - 1]) - np.mean(ep[0]) for ep in cells.values() if ep.get(0) and ep.get(k - 1)]
        assert row["tasks"] == len(d) and row["diff_pp"] == pytest.approx(100 * np.mean(d), abs=0.01)
        assert row["ci_pp"] == pytest.approx(adjusted_pp(d), abs=0.01)  # stats.kernel's interval, by scipy


def test_resolved_counts_partial_as_zero_and_says_how_many(cli, partial_run):
    report = _report(cli)
    graded = [r for r in partial_run if "reward" in r]
    partial = sum(0 < r["reward"] < 1 for r in graded)
    assert report["metric"] == "resolved"
    assert report["pass_pct"] == pytest.approx(100 * np.mean([r["reward"] >= 1 for r in graded]), abs=0.01)
    (warning,) = report["warnings"]
    assert f"{partial} graded trajectories" in warning and "--metric reward" in warning
    human = cli("train", "report", "rl", "--metric", "reward")
    assert human.exit_code == 0 and "reward %" in human.stdout and "mean reward" in human.stdout
    bad = cli("train", "report", "rl", "--metric", "score")
    assert bad.exit_code == 2 and "--metric must be one of resolved, reward" in bad.stderr


@pytest.mark.postgres
def test_mean_reward_on_postgres_equals_sqlite(cli, pg, partial_run, tmp_path: Path):
    path = tmp_path / "t.jsonl"
    assert cli("import", "jsonl", str(path), "--run", "rl", "--kind", "train", "--db", pg, use_db=False).exit_code == 0
    for metric in ("reward", "resolved"):
        on_pg = cli("train", "report", "rl", "--metric", metric, "--json", "--db", pg, use_db=False)
        assert on_pg.exit_code == 0, on_pg.stderr
        assert json.loads(on_pg.stdout) == _report(cli, "--metric", metric)

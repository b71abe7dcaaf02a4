"""What a claim means (stats.shrink): the lower bound and the shrunken estimate beside each claim, and by
simulation, that the shrunken estimate removes most of the winner's-curse bias at a true +3 pp."""

from __future__ import annotations

import json

import numpy as np
import pytest

from trialbook.stats.compare import compare
from trialbook.stats.scores import TaskScores
from trialbook.stats.shrink import prior_sd, shrunk

TASKS, ATTEMPTS, REPS = 500, 2, 600


def _scores(run: str, resolved: np.ndarray) -> TaskScores:
    ids = np.array([f"t{i:04d}" for i in range(TASKS)])
    k = np.full(TASKS, ATTEMPTS)
    return TaskScores(run=run, task_ids=ids, repos=np.array(["o/r"] * TASKS), trials=k, graded=k,
                      resolved=resolved, stack={}, labels={}, created="2026-01-01")  # fmt: skip


def test_shrunken_estimate_by_hand():
    tau = 4 / 1.6448536269514722  # prior P(gain >= 4 pp) = 5%
    assert prior_sd(4) == pytest.approx(tau)
    assert shrunk(5.0, 1.5, 4) == pytest.approx(5 * tau**2 / (tau**2 + 2.25), abs=1e-4)
    assert shrunk(5.0, 1.5, 0) == pytest.approx(5 / (1 + 2.25 * 1.6448536269514722**2), abs=1e-4)  # 1 pp floor
    assert shrunk(None, 1.0, 4) is None and shrunk(3.0, float("nan"), 4) is None
    assert shrunk(-6.0, 1.0, 4) == pytest.approx(-shrunk(6.0, 1.0, 4))


def test_shrunken_estimate_reduces_the_winners_curse_at_a_true_3pp():
    """The seed's design: 500 tasks, 2 attempts, base rates Beta(1, 1), a true gain of +3 pp on every task's
    rate (clipped). Among the replications that claim (diff >= 4 and lower bound > 0), the observed gain
    averages ~+4.8; the shrunken one must be at most half as far from the truth, and not overshoot below."""
    rng = np.random.default_rng(48)
    rate = rng.beta(1, 1, 400_000)
    truth = 100 * float(np.mean(np.clip(rate + 0.03, 0, 1) - rate))
    claimed, shrunken = [], []
    for _ in range(REPS):
        p = rng.beta(1, 1, TASKS)
        runs = {"base": _scores("base", rng.binomial(ATTEMPTS, p)),
                "cand": _scores("cand", rng.binomial(ATTEMPTS, np.clip(p + 0.03, 0, 1)))}  # fmt: skip
        (row,) = compare(None, "base", ["cand"], runs=runs, sensitivity=False).comparisons  # type: ignore[arg-type]
        assert row.lower_bound_pp == row.ci_adjusted_pp[0]
        if row.claim:
            claimed.append(row.diff_pp)
            shrunken.append(row.shrunk_pp)
    rate_of_claims = len(claimed) / REPS
    naive_bias = np.mean(claimed) - truth
    shrunk_bias = np.mean(shrunken) - truth
    assert 0.15 < rate_of_claims < 0.4, rate_of_claims  # the audit: 26%
    assert naive_bias > 1.2, naive_bias  # the audit: claims report +4.75 on average
    assert abs(shrunk_bias) < naive_bias / 2, (naive_bias, shrunk_bias)


def test_claim_lines_show_the_bound_and_the_shrunken_estimate(cli, tmp_path):
    lines = []
    for run, solved in (("base", 10), ("cand", 30)):
        lines = [f'{{"task_id": "t{i}", "attempt": 0, "resolved": {str(i < solved).lower()}}}' for i in range(60)]
        (tmp_path / f"{run}.jsonl").write_text("\n".join(lines) + "\n")
        assert cli("import", "jsonl", str(tmp_path / f"{run}.jsonl"), "--run", run).exit_code == 0
    (row,) = json.loads(cli("compare", "base", "cand", "--json").stdout)["comparisons"]
    assert row["claim"] and row["lower_bound_pp"] == row["ci_adjusted_pp"][0] > 0
    assert 0 < row["shrunk_pp"] < row["diff_pp"]
    text = " ".join(cli("compare", "base", "cand").stdout.split())
    lb = row["lower_bound_pp"]
    assert f"cand claims {row['diff_pp']:+.2f} pp: gain at least {lb:+.2f} pp (lower CI bound)" in text
    assert f"shrunk estimate {row['shrunk_pp']:+.2f} pp" in text
    md = cli("compare", "base", "cand", "--markdown").stdout
    assert "- cand claims" in md

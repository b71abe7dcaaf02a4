"""The claim rule on its boundary: a difference exactly equal to --min-diff is a claim (`>=`, not `>`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trialbook.stats.synthetic import task_ids, write_jsonl

TASKS = 100


@pytest.fixture
def twenty_points(cli, tmp_path: Path):
    """Baseline solves 40 of 100 tasks, the candidate the same 40 plus 20 more: exactly +20 pp, no loss."""
    ids = task_ids(TASKS)
    base = [{"task_id": t, "resolved": i < 40} for i, t in enumerate(ids)]
    cand = [{"task_id": t, "resolved": i < 60} for i, t in enumerate(ids)]
    for name, lines in (("base", base), ("cand", cand)):
        assert cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines)), "--run", name).exit_code == 0
    (tmp_path / "pool.txt").write_text("\n".join(ids) + "\n")
    return cli


@pytest.mark.parametrize(("min_diff", "claim"), [("19.99", True), ("20", True), ("20.01", False)])
def test_a_difference_equal_to_min_diff_is_a_claim(twenty_points, min_diff: str, claim: bool) -> None:
    res = twenty_points("compare", "base", "cand", "--min-diff", min_diff, "--json")
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)["comparisons"]
    assert row["diff_pp"] == 20.0 and (row["wins"], row["losses"]) == (20, 0)
    assert row["ci_adjusted_pp"][0] > 0  # only the min-diff half of the rule is on trial here
    assert row["claim"] is claim


def test_the_preregistered_verdict_uses_the_same_boundary(twenty_points, tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    res = twenty_points("prereg", "init", "--pool", str(tmp_path / "pool.txt"), "--train", "0", "--holdout",
                        str(TASKS), "--seed", "1", "--min-diff", "20", "--out", str(plan))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    res = twenty_points("prereg", "check", str(plan), "--base", "base", "--cand", "cand", "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["verdict"] == {"cand": True}


def test_claim_power_counts_an_estimate_equal_to_min_diff() -> None:
    from trialbook.stats.power import claim_probability

    # with no sampling noise the estimate is the true gain: a claim exactly when gain >= min_diff (at enough
    # tasks for compare's interval, never a point, to exclude 0)
    assert claim_probability(0.0, 2000, 0.04, 1, 0.04) == 1.0
    assert claim_probability(0.0, 2000, 0.0399, 1, 0.04) == 0.0

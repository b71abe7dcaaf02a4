"""The worst-case sensitivity rows are true bounds: simulated runs whose ungraded trials have a real
(hidden) outcome, compared as `compare` sees them. The difference the hidden outcomes would have given
lies between worst_low and worst_high in every case; "both as failures / both as successes" does not
(the audit's data printed [+3.43, +13.28] against true worst cases -8.94 and +25.66)."""

from __future__ import annotations

import numpy as np

from trialbook.stats.compare import CompareRequest, compare
from trialbook.stats.scores import TaskScores


def _run(name: str, ids: np.ndarray, trials: np.ndarray, graded: np.ndarray, resolved: np.ndarray) -> TaskScores:
    return TaskScores(run=name, task_ids=ids, repos=np.full(ids.size, "o/r"), trials=trials, graded=graded,
                      resolved=resolved, stack={}, labels={}, created="2026-01-01")  # fmt: skip


def _simulate(rng: np.random.Generator) -> tuple[dict[str, TaskScores], float]:
    """Two runs on the same tasks with some trials ungraded in each; and the diff with every outcome known."""
    n, k = int(rng.integers(8, 60)), int(rng.integers(1, 4))
    ids = np.array([f"o__r-{i:03d}" for i in range(n)])
    truth = {}
    runs = {}
    for name, shift in (("base", 0.0), ("cand", rng.uniform(-0.2, 0.2))):
        p = np.clip(rng.beta(0.7, 0.7, n) + shift, 0, 1)
        outcome = rng.random((n, k)) < p[:, None]
        lost = rng.random((n, k)) < rng.uniform(0.02, 0.4)  # ungraded: the verifier never said
        trials = np.full(n, k)
        runs[name] = _run(name, ids, trials, (~lost).sum(1), (outcome & ~lost).sum(1))
        truth[name] = outcome.mean(1)
    return runs, float(np.mean(truth["cand"] - truth["base"]))


def test_worst_cases_contain_the_truth_in_every_case():
    rng = np.random.default_rng(48)
    naive_missed = 0
    for _ in range(80):
        runs, true_diff = _simulate(rng)
        res = compare(None, CompareRequest("base", ["cand"], min_diff=0.0), runs=runs)  # type: ignore[arg-type]
        if res.sensitivity is None:
            continue
        v = res.sensitivity.verdicts["cand"]
        low, high = v["worst_low"].diff_pp, v["worst_high"].diff_pp
        assert low is not None and high is not None
        assert low - 1e-3 <= 100 * true_diff <= high + 1e-3, (low, 100 * true_diff, high)
        assert v["worst_low"].tasks_paired == v["worst_high"].tasks_paired == runs["base"].task_ids.size
        both = sorted([v["as_failures"].diff_pp, v["as_successes"].diff_pp])
        naive_missed += not both[0] - 1e-3 <= 100 * true_diff <= both[1] + 1e-3
    assert naive_missed > 5  # the rows counted the same way in both runs are no bounds


def test_worst_cases_are_printed_and_labelled():
    ids = np.array(["o__r-1", "o__r-2", "o__r-3", "o__r-4"])
    one = np.ones(4, dtype=np.int64)
    runs = {"base": _run("base", ids, one, np.array([1, 1, 0, 1]), np.array([1, 0, 0, 0])),
            "cand": _run("cand", ids, one, np.array([0, 1, 1, 1]), np.array([0, 1, 1, 0]))}  # fmt: skip
    res = compare(None, CompareRequest("base", ["cand"]), runs=runs)  # type: ignore[arg-type]
    v = res.sensitivity.verdicts["cand"]  # type: ignore[union-attr]
    # worst low: base 1, 0, 1, 0 (its ungraded 3rd a success), cand 0, 1, 1, 0 (its ungraded 1st a failure)
    assert v["worst_low"].diff_pp == 0.0
    # worst high: base 1, 0, 0, 0, cand 1, 1, 1, 0
    assert v["worst_high"].diff_pp == 50.0
    from trialbook.report.compare import sensitivity_lines

    lines = sensitivity_lines(res)
    assert lines[2].startswith("  cand worst cases: low (base's as successes, candidate's as failures) +0.00")
    assert "high (base's as failures, candidate's as successes) +50.00" in lines[2]

"""The crossed worst cases' interval ends are the extremes over every assignment of the ungraded trials (the
interval is monotone in the task differences, stats.kernel.lower_ends), checked by brute force: every assignment
of every ungraded trial enumerated, each compared as `compare` compares it. worst_low's lower end is the lowest
lower end, worst_high's upper end the highest, the differences the lowest and highest, worst_low claims only
when every assignment claims, and the two verdicts are monotone (never worst-low claim, worst-high no claim)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from trialbook.stats.compare import CompareRequest, compare
from trialbook.stats.scores import TaskScores


def _run(name: str, trials: np.ndarray, graded: np.ndarray, resolved: np.ndarray) -> TaskScores:
    ids = np.array([f"o__r-{i:03d}" for i in range(trials.size)])
    return TaskScores(run=name, task_ids=ids, repos=np.full(ids.size, "o/r"), trials=trials, graded=graded,
                      resolved=resolved, stack={}, labels={}, created="2026-01-01")  # fmt: skip


def _design(rng: np.random.Generator, n: int, k: int, most: int) -> dict[str, TaskScores]:
    """Two runs of n tasks x k attempts with at most `most` ungraded trials in all."""
    while True:
        runs = {}
        for name, p in (("base", rng.uniform(0.1, 0.6)), ("cand", rng.uniform(0.3, 0.95))):
            out = rng.random((n, k)) < p
            lost = rng.random((n, k)) < 0.15
            runs[name] = _run(name, np.full(n, k), (~lost).sum(1), (out & ~lost).sum(1))
        ungraded = sum(int((s.trials - s.graded).sum()) for s in runs.values())
        both = int(((runs["base"].graded > 0) & (runs["cand"].graded > 0)).sum())
        if 0 < ungraded <= most and both >= 2:
            return runs


def _every_assignment(runs: dict[str, TaskScores], min_diff: float) -> list[tuple[float, float, float, bool]]:
    """(diff, lo, hi, claim) in pp for every assignment of the ungraded trials (each 0 or 1)."""
    choices = []
    for s in runs.values():
        choices.append([range(int(u) + 1) for u in s.trials - s.graded])  # successes among a task's ungraded
    out = []
    for jb in itertools.product(*choices[0]):
        for jc in itertools.product(*choices[1]):
            filled = {name: _run(name, s.trials, s.trials, s.resolved + np.array(j, dtype=np.int64))
                      for (name, s), j in zip(runs.items(), (jb, jc), strict=True)}  # fmt: skip
            r = compare(None, CompareRequest("base", ["cand"], min_diff=min_diff), runs=filled, sensitivity=False)  # type: ignore[arg-type]
            row = r.comparisons[0]
            out.append((row.diff_pp, row.ci_adjusted_pp[0], row.ci_adjusted_pp[1], row.claim))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_printed_ends_are_the_extremes_over_every_assignment(seed: int):
    rng = np.random.default_rng(580 + seed)
    checked = 0
    for _ in range(6):
        n, k = int(rng.integers(3, 9)), int(rng.integers(1, 3))
        runs = _design(rng, n, k, most=9)
        min_diff = float(rng.choice([0.0, 4.0]))
        res = compare(None, CompareRequest("base", ["cand"], min_diff=min_diff), runs=runs)  # type: ignore[arg-type]
        v = res.sensitivity.verdicts["cand"]  # type: ignore[union-attr]
        low, high = v["worst_low"], v["worst_high"]
        every = _every_assignment(runs, min_diff)
        diffs, los, his, claims = zip(*every, strict=True)
        assert low.diff_pp == pytest.approx(min(diffs), abs=1e-3)
        assert high.diff_pp == pytest.approx(max(diffs), abs=1e-3)
        assert low.ci_adjusted_pp[0] == pytest.approx(min(los), abs=1e-3)  # type: ignore[index]
        assert high.ci_adjusted_pp[1] == pytest.approx(max(his), abs=1e-3)  # type: ignore[index]
        assert low.claim == all(claims)  # worst low claims exactly when every assignment claims
        assert not high.claim or any(claims)  # worst high's claim is a real assignment's
        assert not low.claim or high.claim  # monotone
        checked += 1
    assert checked == 6


def test_the_verdicts_are_monotone_at_thirty_tasks():
    """The audit's case: 30 tasks where worst low claimed and worst high did not (a wider interval for the
    assignment favouring the candidate). Whatever the data, worst low's claim implies worst high's."""
    rng = np.random.default_rng(3030)
    lows = 0
    for _ in range(60):
        runs = _design(rng, 30, 1, most=8)
        res = compare(None, CompareRequest("base", ["cand"], min_diff=0.0), runs=runs)  # type: ignore[arg-type]
        v = res.sensitivity.verdicts["cand"]  # type: ignore[union-attr]
        lows += v["worst_low"].claim
        assert not v["worst_low"].claim or v["worst_high"].claim
        assert v["worst_low"].ci_adjusted_pp[0] <= v["worst_high"].ci_adjusted_pp[0] + 1e-9  # type: ignore[index]
    assert 5 < lows < 60  # some claim under every assignment, some do not


def test_the_ends_are_the_extremes_with_many_tasks_ungraded():
    """40 tasks with ungraded trials (2^40 assignments: the old search gave a bound there): worst low's lower
    end is at most that of 300 random assignments, worst high's upper end at least, and they are reached."""
    rng = np.random.default_rng(41)
    runs = _design(rng, 60, 2, most=10_000)
    res = compare(None, CompareRequest("base", ["cand"], min_diff=0.0), runs=runs)  # type: ignore[arg-type]
    v = res.sensitivity.verdicts["cand"]  # type: ignore[union-attr]
    low, high = v["worst_low"].ci_adjusted_pp[0], v["worst_high"].ci_adjusted_pp[1]  # type: ignore[index]
    assert sum(int((s.trials - s.graded > 0).sum()) for s in runs.values()) >= 16
    for _ in range(300):
        filled = {name: _run(name, s.trials, s.trials, s.resolved + rng.binomial(s.trials - s.graded, rng.random()))
                  for name, s in runs.items()}  # fmt: skip
        r = compare(None, CompareRequest("base", ["cand"], min_diff=0.0), runs=filled, sensitivity=False)  # type: ignore[arg-type]
        lo, hi = r.comparisons[0].ci_adjusted_pp  # type: ignore[misc]
        assert low <= lo + 1e-9 and hi <= high + 1e-9

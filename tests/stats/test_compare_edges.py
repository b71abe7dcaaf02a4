"""`compare` on two hand-built six-task runs, every figure worked out in the comments: the per-repo table,
the --split gap and its unknown tasks, the Bonferroni cap at 1 under --picked-from, and `pp` on what is
not a number. Preloaded scores (`runs=`), so no ledger is read."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from smallsample import adjusted, adjusted_pp
from trialbook.errors import UserError
from trialbook.stats.compare import CompareRequest, compare, pp
from trialbook.stats.scores import TaskScores

IDS = ["o__a-1", "o__a-2", "o__a-3", "o__b-1", "o__b-2", "o__b-3"]
BASE = [1, 0, 0, 1, 1, 0]
CAND = [1, 1, 1, 0, 1, 1]  # differences: repo o/a 0, 1, 1; repo o/b -1, 0, 1


def _scores(run: str, resolved: list[int]) -> TaskScores:
    one = np.ones(len(IDS), dtype=np.int64)
    return TaskScores(run=run, task_ids=np.array(IDS), repos=np.array(["o/a"] * 3 + ["o/b"] * 3), trials=one,
                      graded=one, resolved=np.array(resolved), stack={}, labels={}, created="2026-01-01")  # fmt: skip


def _compare(**kw):
    runs = {"base": _scores("base", BASE), "cand": _scores("cand", CAND)}
    return compare(None, CompareRequest("base", ["cand"], **kw), runs=runs)  # type: ignore[arg-type]  # no ledger read


def _t_ci(d: list[int]) -> list[float]:
    """The small-sample 95% interval in points, clipped to [-100, 100] (fewer than 30 tasks)."""
    return adjusted_pp(d)


def test_by_repo_rows_by_hand() -> None:
    a, b = _compare(by_repo=True).by_repo["cand"]
    # o/a: base 1/3, candidate 3/3, +66.67 points, 2 wins, 1 tie; d = 0, 1, 1 with the pseudo-tasks (N = 5):
    # mean 2/5, second moment 3/5, var 0.44, SE sqrt(0.44/5), t on 2n = 6 df -> [-32.59, 100] after the clip
    assert (a.repo, a.tasks, a.base_pct, a.cand_pct, a.diff_pp) == ("o/a", 3, 33.3333, 100.0, 66.6667)
    assert (a.wins, a.losses, a.ties) == (2, 0, 1)
    assert a.ci_pp == _t_ci([0, 1, 1]) and a.ci_pp[0] == pytest.approx(-32.5871, abs=1e-4) and a.ci_pp[1] == 100.0
    # o/b: 2/3 both, d = -1, 0, 1: one win, one loss, one tie. The plain ends are -/+84.76; the monotone ones
    # (the best over every d' <= d for the lower end) cap the win nearer 0, which narrows the spread: -/+82.59
    assert (b.repo, b.tasks, b.base_pct, b.cand_pct, b.diff_pp) == ("o/b", 3, 66.6667, 66.6667, 0.0)
    assert (b.wins, b.losses, b.ties) == (1, 1, 1) and b.ci_pp == _t_ci([-1, 0, 1]) == [-82.5861, 82.5861]


def test_split_gap_and_unknown_tasks_by_hand(tmp_path: Path) -> None:
    split = tmp_path / "in.txt"
    split.write_text("o__a-1\no__a-2\no__a-3\nzz__unknown-1\n")
    res = _compare(split=split)
    assert f"{split}: 1 of its 4 tasks are in neither run" in res.warnings
    assert res.split is not None and (res.split.file, res.split.tasks) == (str(split), 4)
    (gap,) = res.split.gaps
    # in (o/a): diff 2/3; out (o/b): diff 0; the SEs are the small-sample interval's (3 tasks each); t on
    # the Welch df (se_a^2 + se_b^2)^2 / (se_a^4 / 2 + se_b^4 / 2), rounded down
    se_a, se_b = adjusted([0, 1, 1])[2], adjusted([-1, 0, 1])[2]
    se = math.hypot(se_a, se_b)
    df = (se_a**2 + se_b**2) ** 2 / (se_a**4 / 2 + se_b**4 / 2)
    q = stats.t.ppf(0.975, math.floor(df))
    assert (gap.candidate, gap.gap_pp, gap.se_pp) == ("cand", 66.6667, round(100 * se, 4))
    # clipped to [-200, 200]: a difference of two differences of task means
    assert gap.ci_pp == pytest.approx([100 * (2 / 3 - q * se), min(200.0, 100 * (2 / 3 + q * se))], abs=1e-3)
    assert (gap.in_tasks, gap.out_tasks, gap.df) == (3, 3, round(df, 1))
    assert [r.subset for r in res.comparisons] == ["all", "in", "out"]


def test_bonferroni_adjusted_p_is_capped_at_1() -> None:
    # all six: d = 0, 1, 1, -1, 0, 1: the small-sample p is 0.377; picked from 3: 3 x p = 1.13 -> 1
    (row,) = _compare(picked_from=3).comparisons
    assert row.p_value == pytest.approx(adjusted([0, 1, 1, -1, 0, 1])[3], abs=1e-12) and row.p_value > 1 / 3
    assert row.p_adjusted == 1.0 and row.ci_level == round(1 - 0.05 / 3, 6)
    (row,) = _compare().comparisons  # one candidate, not picked: Holm of one p is the p itself
    assert row.p_adjusted == pytest.approx(row.p_value, abs=1e-12) and row.ci_level == 0.95


@pytest.mark.parametrize("x", [None, float("nan"), float("inf"), float("-inf")])
def test_pp_of_no_number_is_none(x: float | None) -> None:
    assert pp(x) is None  # type: ignore[arg-type]


def test_pp_rounds_to_four_decimals() -> None:
    assert pp(0.123456789) == 12.3457 and pp(-0.5) == -50.0 and pp(0.0) == 0.0


def _run(run: str, graded: dict[str, int], repo: str = "o/r") -> TaskScores:
    ids = sorted(graded)
    g = np.array([graded[t] for t in ids], dtype=np.int64)
    return TaskScores(run=run, task_ids=np.array(ids), repos=np.array([repo] * len(ids)), trials=np.maximum(g, 1),
                      graded=g, resolved=g, stack={}, labels={}, created="2026-01-01")  # fmt: skip


def test_align_counts_every_reason_a_task_is_not_paired() -> None:
    from trialbook.stats.compare import align

    # 2 only in base, 1 only in the candidate, 1 ungraded in base only, 2 in the candidate only, 3 in both
    base = _run("b", {"a0": 1, "a1": 1, "c1": 0, "d1": 1, "d2": 1, "e1": 0, "e2": 0, "e3": 0, "p1": 1, "p2": 1})
    cand = _run("c", {"c1": 1, "d1": 0, "d2": 0, "e1": 0, "e2": 0, "e3": 0, "f1": 1, "p1": 1, "p2": 1})
    ids, ib, ic, unpaired = align(base, cand)
    assert ids.tolist() == ["p1", "p2"] and base.task_ids[ib].tolist() == cand.task_ids[ic].tolist() == ["p1", "p2"]
    assert unpaired == {"only_in_base": 2, "only_in_candidate": 1, "ungraded_in_base": 1,
                        "ungraded_in_candidate": 2, "ungraded_in_both": 3}  # fmt: skip


def test_excluded_repos_and_task_list_are_counted(tmp_path: Path) -> None:
    from trialbook.stats.compare import exclude_repos, exclude_tasks

    runs = [_run("b", {"x1": 1, "x2": 1}, "o/x"), _run("c", {"x2": 1, "x3": 1}, "o/x"), _run("d", {"y1": 1}, "o/y")]
    out, dropped = exclude_repos(runs, ["x"])  # short name; 3 distinct tasks over the runs
    assert dropped == {"o/x": 3} and [s.task_ids.size for s in out] == [0, 0, 1]
    assert exclude_repos(runs, []) == (runs, {})
    listed = tmp_path / "drop.txt"
    listed.write_text("x1\nx3\nnope\n")
    out, note = exclude_tasks(runs, listed)
    assert note == f"excluded before pairing: 2 tasks listed in {listed} (3 listed)"
    assert [s.task_ids.tolist() for s in out] == [["x2"], ["x2"], ["y1"]]
    assert exclude_tasks(runs, None) == (runs, None)


def test_row_with_two_attempts_per_task_by_hand() -> None:
    ids, two = np.array(["o__r-1", "o__r-2", "o__r-3", "o__r-4"]), np.full(4, 2)

    def run(name: str, resolved: list[int]) -> TaskScores:
        return TaskScores(run=name, task_ids=ids, repos=np.array(["o/r"] * 4), trials=two, graded=two,
                          resolved=np.array(resolved), stack={}, labels={}, created="2026-01-01")  # fmt: skip

    # resolved of 2: base 1, 0, 2, 0 (scores .5, 0, 1, 0); candidate 2, 1, 2, 0 (1, .5, 1, 0)
    (row,) = compare(None, CompareRequest("base", ["cand"]), runs={"base": run("base", [1, 0, 2, 0]),  # type: ignore[arg-type]
                                                  "cand": run("cand", [2, 1, 2, 0])}).comparisons  # fmt: skip
    # pass@2 (some of 2 resolved): 1, 0, 1, 0 -> 50% against 1, 1, 1, 0 -> 75%;
    # pass^2 (both resolved): 0, 0, 1, 0 -> 25% against 1, 0, 1, 0 -> 50%
    assert sorted(row.pass_at_k) == ["pass@2", "pass^2"]
    assert (row.pass_at_k["pass@2"].base_pct, row.pass_at_k["pass@2"].cand_pct) == (50.0, 75.0)
    assert (row.pass_at_k["pass^2"].base_pct, row.pass_at_k["pass^2"].cand_pct) == (25.0, 50.0)
    assert row.pass_at_k["pass@2"].diff_pp == row.pass_at_k["pass^2"].diff_pp == 25.0
    assert row.correlation == round(float(np.corrcoef([0.5, 0, 1, 0], [1, 0.5, 1, 0])[0, 1]), 4) == 0.8182
    assert (row.tasks_won, row.tasks_lost) == (["o__r-1", "o__r-2"], [])
    assert row.bootstrap_ci_pp is None  # asked for with bootstrap=True only


def test_no_claim_when_the_lower_bound_is_exactly_zero() -> None:
    # identical runs, --min-diff 0: the difference (0) reaches min-diff; the interval of six ties is never the
    # point [0, 0] (it was), and its lower bound is below 0
    runs = {"base": _scores("base", BASE), "cand": _scores("cand", BASE)}
    (row,) = compare(None, CompareRequest("base", ["cand"], min_diff=0.0), runs=runs).comparisons  # type: ignore[arg-type]
    assert (row.diff_pp, row.ci_adjusted_pp, row.claim) == (0.0, adjusted_pp([0] * 6), False)
    assert row.ci_adjusted_pp[0] < 0 < row.ci_adjusted_pp[1]
    (row,) = _compare(bootstrap=True).comparisons
    assert row.bootstrap_ci_pp is not None and len(row.bootstrap_ci_pp) == 2
    assert row.bootstrap_ci_pp[0] < row.diff_pp < row.bootstrap_ci_pp[1]


def _with_ungraded(run: str, resolved: list[int], ungraded: str) -> TaskScores:
    """A six-task run whose task `ungraded` has its one trial ungraded."""
    s = _scores(run, resolved)
    graded = np.where(s.task_ids == ungraded, 0, 1)
    return TaskScores(run=run, task_ids=s.task_ids, repos=s.repos, trials=s.trials, graded=graded,
                      resolved=s.resolved * graded, stack={}, labels={}, created=s.created)  # fmt: skip


def test_sensitivity_keeps_the_options_and_reads_the_all_rows(tmp_path: Path) -> None:
    # o/a only (o/b excluded): base 1, 0, 0; candidate 1, 1, ungraded. Dropped: d = 0, 1 (+50 points);
    # the ungraded trial as a failure: 0, 1, 0 (+33.33); as a success: 0, 1, 1 (+66.67): 3 tasks, not 6
    runs = {"base": _scores("base", BASE), "cand": _with_ungraded("cand", CAND, "o__a-3")}
    res = compare(None, CompareRequest("base", ["cand"], exclude=["o/b"], min_diff=10.0), runs=runs)  # type: ignore[arg-type]
    assert res.sensitivity is not None and res.sensitivity.ungraded_trials == {"base": 0, "cand": 1}
    got = {k: (v.tasks_paired, v.diff_pp) for k, v in res.sensitivity.verdicts["cand"].items()}
    assert got == {"dropped": (2, 50.0), "as_failures": (3, 33.3333), "as_successes": (3, 66.6667),
                   # the baseline has no ungraded trial: its worst cases are the candidate's two
                   "worst_low": (3, 33.3333), "worst_high": (3, 66.6667)}  # fmt: skip
    (row,) = res.comparisons
    assert res.sensitivity.verdicts["cand"]["dropped"].ci_adjusted_pp == row.ci_adjusted_pp
    assert all(v.ci_adjusted_pp is not None for v in res.sensitivity.verdicts["cand"].values())
    # with --split the in and out rows stay out of the verdict: all six tasks, the ungraded one a failure:
    # d = 0, 1, 0, -1, 0, 1 -> +16.67 (the out rows alone would say 0)
    split = tmp_path / "in.txt"
    split.write_text("o__a-1\no__a-2\no__a-3\n")
    res = compare(None, CompareRequest("base", ["cand"], split=split), runs=runs)  # type: ignore[arg-type]
    assert res.sensitivity is not None
    assert res.sensitivity.verdicts["cand"]["as_failures"].diff_pp == 16.6667
    assert compare(None, CompareRequest("base", ["cand"]), runs=runs, sensitivity=False).sensitivity is None  # type: ignore[arg-type]


def test_defaults_and_warnings_word_for_word(tmp_path: Path) -> None:
    res = _compare()
    assert (res.min_diff_pp, res.by_repo, res.split, res.candidates_considered) == (4.0, None, None, 1)
    (row,) = res.comparisons
    assert row.unpaired is not None and row.bootstrap_ci_pp is None
    assert res.warnings == [
        "only 6 tasks paired for 'cand' (few tasks): CIs are the small-sample (Agresti-Min adjusted)"
        " interval, clipped to [-100, +100] pp"
    ]
    res = _compare(picked_from=3)
    assert res.warnings[-1] == (
        "each candidate is picked among 3 against one baseline: p-values adjusted (Holm, Bonferroni for unseen"
        " ones), CIs widened to 98.3% (Bonferroni); the best of several is biased upward, confirm it on fresh"
        " tasks/seeds (`trialbook prereg init`)"
    )
    listed = tmp_path / "drop.txt"
    listed.write_text("o__b-3\n")
    res = _compare(exclude_task_file=listed)
    assert res.warnings[0] == f"excluded before pairing: 1 tasks listed in {listed} (1 listed)"


def test_excluded_repos_warning_names_each_repo() -> None:
    repos = np.array(["o/a", "o/a", "o/a", "o/b", "o/b", "o/c"])
    runs = {n: replace(_scores(n, r), repos=repos) for n, r in (("base", BASE), ("cand", CAND))}
    res = compare(None, CompareRequest("base", ["cand"], exclude=["o/b", "o/c"]), runs=runs)  # type: ignore[arg-type]
    assert res.warnings[0] == "excluded before pairing: o/b (2 tasks), o/c (1 tasks)"
    assert res.excluded == {"o/b": 2, "o/c": 1} and res.comparisons[0].excluded_repos == ["o/b", "o/c"]


def test_partial_rewards_caveat_names_each_run() -> None:
    runs = {n: replace(_scores(n, r), partial=np.array(p))
            for n, r, p in (("base", BASE, [1, 0, 0, 0, 0, 0]), ("cand", CAND, [0, 1, 1, 0, 0, 0]))}  # fmt: skip
    res = compare(None, CompareRequest("base", ["cand"]), runs=runs)  # type: ignore[arg-type]
    assert (
        "partial rewards (0 < reward < 1) count as unresolved under --metric resolved: 'base' 1, 'cand' 2 graded"
        " trial(s); `--metric reward` compares mean reward"
    ) in res.warnings


def test_a_split_subset_with_one_task_gets_no_row(tmp_path: Path) -> None:
    split = tmp_path / "in.txt"
    split.write_text("o__a-1\n")
    res = _compare(split=split)
    # in: 1 task, no row (and no gap); out: the other 5 still get theirs
    assert "'cand': subset 'in' has 1 paired tasks, no row" in res.warnings
    assert [(r.subset, r.tasks_paired) for r in res.comparisons] == [("all", 6), ("out", 5)]
    assert res.split is not None and res.split.gaps == []
    assert [r.unpaired is None for r in res.comparisons] == [False, True]  # the unpaired counts: on "all" only


def test_unpaired_and_few_tasks_warnings_name_the_candidate() -> None:
    base = _run("base", {t: 1 for t in ("t1", "t2", "t3", "t4")})
    cand = _run("cand", {"t1": 1, "t2": 1, "t5": 1})
    res = compare(None, CompareRequest("base", ["cand"]), runs={"base": base, "cand": cand})  # type: ignore[arg-type]
    assert "3 of 5 tasks not paired for 'cand' (only in base 2, only in candidate 1): the comparison covers only" \
        " the rest" in res.warnings  # fmt: skip
    assert any(w.startswith("only 2 tasks paired for 'cand' (few tasks)") for w in res.warnings)


@pytest.mark.parametrize(("cands", "picked", "message"), [
    ([], None, "give at least one candidate run after the baseline"),
    (["cand", "cand"], None, "a candidate run is named twice"),
    (["cand"], 0, "--picked-from 0 is fewer than the 1 candidates given"),
])  # fmt: skip
def test_bad_names_word_for_word(cands: list[str], picked: int | None, message: str) -> None:
    runs = {"base": _scores("base", BASE), "cand": _scores("cand", CAND)}
    with pytest.raises(UserError, match=rf"^{re.escape(message)}$"):
        compare(None, CompareRequest("base", cands, picked_from=picked), runs=runs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("cand", "message"), [
    ({"x1": 1}, "runs 'base' and 'cand' have no graded task in common"),
    ({"t1": 1}, "runs 'base' and 'cand' have only 1 graded task in common (need 2+)"),
])  # fmt: skip
def test_too_few_paired_tasks_word_for_word(cand: dict[str, int], message: str) -> None:
    runs = {"base": _run("base", {"t1": 1, "t2": 1}), "cand": _run("cand", cand)}
    with pytest.raises(UserError, match=rf"^{re.escape(message)}$"):
        compare(None, CompareRequest("base", ["cand"]), runs=runs)  # type: ignore[arg-type]


def test_min_diff_zero_is_allowed() -> None:
    assert _compare(min_diff=0.0).min_diff_pp == 0.0
    assert _compare(min_diff=0.5).min_diff_pp == 0.5

"""One rule each for the t interval, the cluster CI, task lists and repo names, pinned on the cases
where the copies in compare/plan and train report used to disagree."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats
from scipy.special import stdtrit

from smallsample import adjusted
from trialbook.errors import UserError
from trialbook.stats import dist
from trialbook.stats.kernel import cluster_ratio_ci, t_interval
from trialbook.stats.selection import read_task_list, resolve_repos
from trialbook.training.encounters import paired_ci


@pytest.mark.parametrize("n", [2, 3, 17, 30, 400, 1500, 5000])
def test_t_interval_is_scipys_in_stats_and_training(n):
    """compare's interval and train report's encounter interval are one function at every n: the adjusted
    interval (tests/smallsample.py, by scipy; n > 1001 takes A&S 26.7.5 for t on 2n df), which tends to
    scipy's t interval as n grows."""
    d = np.clip(np.random.default_rng(n).normal(0.05, 0.3, n), -1, 1)
    mean, se, lo, hi = t_interval(d, 0.95)
    ref = adjusted(d)
    assert (lo, hi, se) == pytest.approx(ref[:3], rel=1e-10, abs=1e-12)
    if n >= 1500:
        ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
        assert (lo, hi) == pytest.approx((ci.low, ci.high), abs=1e-3)
    lo, hi = max(lo, -1.0), min(hi, 1.0)
    row = paired_ci(d)
    assert row["tasks"] == n and row["diff_pp"] == round(100 * mean, 2)
    assert row["ci_pp"] == [round(100 * lo, 2), round(100 * hi, 2)]


def test_t_ppf_large_df_matches_scipy():
    for df in (999, 1001, 4000, 10**5, 10**7):
        for p in (0.6, 0.975, 0.995, 0.99995):
            assert dist.t_ppf(p, df) == pytest.approx(float(stdtrit(df, p)), rel=1e-10)


def test_t_interval_too_few_tasks():
    assert paired_ci(np.array([0.5])) == {"tasks": 1, "diff_pp": 50.0, "ci_pp": None, "few_tasks": True}
    assert paired_ci(np.array([])) == {"tasks": 0, "diff_pp": None, "ci_pp": None, "few_tasks": True}
    _, se, lo, hi = t_interval(np.array([0.5]))
    assert np.isnan(se) and np.isnan(lo) and np.isnan(hi)


def test_cluster_ratio_ci_is_statsmodels_cluster_se():
    rng = np.random.default_rng(3)
    tasks = 40
    n = rng.integers(0, 6, tasks).astype(float)
    y = np.array([rng.binomial(int(k), rng.uniform(0.1, 0.9)) for k in n], dtype=float)
    # statsmodels' CR1 factor C/(C-1) * (N-1)/(N-K) is C/(C-1) for one regressor, as in the kernel.
    p, lo, hi = cluster_ratio_ci(y, n, np.zeros(tasks, dtype=np.int64), 1)
    # The same ratio as an OLS of per-trajectory outcomes on a constant, clustered by task.
    outcome = np.concatenate([np.r_[np.ones(int(a)), np.zeros(int(b - a))] for a, b in zip(y, n, strict=True)])
    groups = np.repeat(np.arange(tasks), n.astype(int))
    fit = sm.OLS(outcome, np.ones_like(outcome)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    clusters = int((n > 0).sum())
    half = stdtrit(clusters - 1, 0.975) * fit.bse[0]
    assert p[0] == pytest.approx(fit.params[0])
    assert (lo[0], hi[0]) == pytest.approx((p[0] - half, p[0] + half), rel=1e-9)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ('["a__b-1", "a__b-2", "a__b-1"]', ["a__b-1", "a__b-2"]),  # both readers
        ("a__b-1\n\n# held out\na__b-2  # flaky\n", ["a__b-1", "a__b-2"]),  # train report kept "a__b-2  # flaky"
        ("- a__b-1\n- 'a__b-2'\n", ["a__b-1", "a__b-2"]),  # train report read "- a__b-1" as an id
        ('{"instance_id": "a__b-1"}\n{"task_id": "a__b-2", "x": 1}\n', ["a__b-1", "a__b-2"]),  # compare's: ids '{...}'
    ],
)
def test_task_list_formats_are_the_union(tmp_path, text, ids):
    assert read_task_list(_write(tmp_path, "list.txt", text)) == ids


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "must be non-empty strings"),  # train report coerced 1 -> "1"
        ('{"name": "a__b-1"}\n', ":1: a JSON line needs a string task_id or instance_id"),  # train report skipped it
        ("{not json\n", ":1: not a JSON object"),  # train report raised a traceback
        ("# nothing\n\n", "no task ids"),  # train report accepted an empty evaluation set
        ("[", "not a JSON list"),
    ],
)
def test_task_list_errors_are_one_line(tmp_path, text, message):
    with pytest.raises(UserError) as exc:
        read_task_list(_write(tmp_path, "list.txt", text))
    assert message in str(exc.value) and "\n" not in str(exc.value) and exc.value.exit_code == 2


def test_repo_names_full_short_and_ambiguous():
    known = ["django/django", "a/utils", "b/utils", "sympy/sympy"]
    assert resolve_repos(["django", "sympy/sympy", "django/django"], known) == ["django/django", "sympy/sympy"]
    assert resolve_repos(["a/utils"], known) == ["a/utils"]
    with pytest.raises(UserError, match="--exclude-repo utils: ambiguous, matches a/utils, b/utils"):
        resolve_repos(["utils"], known)
    with pytest.raises(UserError, match="--exclude-repo zzz: no task of that repo"):
        resolve_repos(["zzz"], known)


def _import(cli, tmp_path: Path, run: str, rows: list[dict], *extra: str) -> None:
    path = tmp_path / f"{run}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("import", "jsonl", str(path), "--run", run, *extra)
    assert res.exit_code == 0, res.stderr


def _train_rows() -> list[dict]:
    rows = []
    for e in range(3):
        for t, repo in enumerate(["a/utils", "b/utils", "django/django", "django/django"]):
            for r in range(2):
                rows.append({"task_id": f"t{t}", "repo": repo, "wv": e, "step": e, "epoch": e, "reward": float(r)})
    return rows


def test_train_report_takes_short_repo_names_like_compare(cli, tmp_path):
    """`train report --exclude-repo` needed the exact owner/name; now the same resolver as `compare`."""
    rows = _train_rows()
    _import(cli, tmp_path, "rl", rows, "--kind", "train")
    short = json.loads(cli("train", "report", "rl", "--exclude-repo", "django", "--json").stdout)
    full = json.loads(cli("train", "report", "rl", "--exclude-repo", "django/django", "--json").stdout)
    assert short["excluded_repos"] == full["excluded_repos"] == {"django/django": 12}
    assert short["trajectories"] == len(rows) - 12
    for argv in (("train", "report", "rl"), ("compare", "base", "cand")):
        if argv[0] == "compare":
            _import(cli, tmp_path, "base", [{k: r[k] for k in ("task_id", "repo", "reward")} for r in rows[:8]])
            _import(cli, tmp_path, "cand", [{k: r[k] for k in ("task_id", "repo", "reward")} for r in rows[8:16]])
        res = cli(*argv, "--exclude-repo", "utils", "--json")
        assert res.exit_code == 2 and res.stdout == ""
        message = "--exclude-repo utils: ambiguous, matches a/utils, b/utils; give the full owner/name"
        assert res.stderr == f"error: {message}\n"

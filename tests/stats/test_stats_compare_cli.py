"""`trialbook compare` end to end: real SWE-bench systems, subsets, warnings and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from paths import INSTANCES, RESULTS
from smallsample import adjusted_pp
from trialbook.stats.synthetic import simulate_run, task_ids, write_jsonl

SYSTEMS = (
    "20250726_mini-v1.0.0_gemini-2.5-pro",
    "20250807_mini-v1.7.0_gpt-5-mini",
    "20240620_sweagent_claude3.5sonnet",
)


@pytest.fixture
def swe(cli):
    for s in SYSTEMS:
        r = cli("import", "swebench", str(RESULTS / f"{s}.json"), "--instances", str(INSTANCES))
        assert r.exit_code == 0, r.stderr
    return cli


def published(system: str) -> float:
    return json.loads((RESULTS / f"{system}.json").read_text())["published_pct_resolved"]


def resolved_vector(system: str) -> np.ndarray:
    ids = sorted(json.loads(line)["instance_id"] for line in INSTANCES.read_text().splitlines() if line.strip())
    resolved = set(json.loads((RESULTS / f"{system}.json").read_text())["resolved"])
    return np.array([t in resolved for t in ids], dtype=float)


def test_real_systems_rates_equal_published(swe):
    base, *cands = SYSTEMS
    r = swe("compare", base, *cands, "--json", "--family", "none")  # Holm over the candidates, alone
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["baseline"] == base
    rows = {row["candidate"]: row for row in res["comparisons"]}
    assert set(rows) == set(cands)
    for cand, row in rows.items():
        assert row["tasks_paired"] == 500
        assert row["base_pct"] == pytest.approx(published(base))
        assert row["cand_pct"] == pytest.approx(published(cand))
        assert row["diff_pp"] == pytest.approx(published(cand) - published(base))
        b, c = resolved_vector(base), resolved_vector(cand)
        assert row["ci_pp"] == pytest.approx(adjusted_pp(c - b), abs=1e-3)
        assert row["ci_adjusted_pp"] == pytest.approx(adjusted_pp(c - b, 1 - 0.05 / 2), abs=1e-3)
        # 500 tasks: near scipy's t interval (the pseudo-tasks pull the centre by diff x 2/502: 0.08 pp at -20)
        ci = stats.ttest_rel(c, b).confidence_interval()
        assert row["ci_pp"] == pytest.approx([100 * ci.low, 100 * ci.high], abs=0.15)
        assert row["wins"] == int(((c - b) > 0).sum()) and row["losses"] == int(((c - b) < 0).sum())
        assert set(row) >= {"candidate", "subset", "tasks_paired", "base_pct", "cand_pct", "diff_pp", "ci_pp",
                            "wins", "losses", "ties", "p_value", "p_adjusted", "claim", "excluded_repos"}  # fmt: skip
    ps = [rows[c]["p_value"] for c in cands]
    assert [rows[c]["p_adjusted"] for c in cands] == pytest.approx(
        [min(1, max(2 * min(ps), p)) if p == max(ps) else 2 * p for p in ps]
    )
    # gpt-5-mini +6.2 with the Bonferroni CI above 0: a claim; sweagent is far worse: none
    assert rows[SYSTEMS[1]]["claim"] is True and rows[SYSTEMS[2]]["claim"] is False
    assert any("2 candidates" in w for w in res["warnings"])


def test_human_and_markdown_output(swe):
    r = swe("compare", SYSTEMS[0], SYSTEMS[1], "--by-repo")
    assert r.exit_code == 0
    assert "by repo" in r.stdout and "django/django" in r.stdout and "claim" in r.stdout
    md = swe("compare", SYSTEMS[0], SYSTEMS[1], "--markdown")
    assert md.stdout.startswith("**Baseline:**") and "| candidate |" in md.stdout and "+6.20" in md.stdout


def test_exclude_repo_drops_tasks_from_both(swe):
    res = json.loads(swe("compare", SYSTEMS[0], SYSTEMS[1], "--exclude-repo", "django",
                         "--exclude-repo", "sympy/sympy", "--json").stdout)  # fmt: skip
    (row,) = res["comparisons"]
    assert res["excluded"] == {"django/django": 231, "sympy/sympy": 75}
    assert row["tasks_paired"] == 500 - 231 - 75
    assert row["excluded_repos"] == ["django/django", "sympy/sympy"]
    assert any("excluded before pairing" in w for w in res["warnings"])


def test_split_rows_and_gap(swe, tmp_path):
    ids = sorted(json.loads(line)["instance_id"] for line in INSTANCES.read_text().splitlines() if line.strip())
    inside = [t for t in ids if t.startswith("django")]
    split = tmp_path / "pool.txt"
    split.write_text("# the training pool\n" + "\n".join(inside + ["no__such-1"]) + "\n")
    res = json.loads(swe("compare", SYSTEMS[0], SYSTEMS[1], "--split", str(split), "--json").stdout)
    rows = {r["subset"]: r for r in res["comparisons"]}
    assert set(rows) == {"all", "in", "out"}
    assert rows["in"]["tasks_paired"] == 231 and rows["out"]["tasks_paired"] == 269
    (gap,) = res["split"]["gaps"]
    assert gap["gap_pp"] == pytest.approx(rows["in"]["diff_pp"] - rows["out"]["diff_pp"], abs=1e-3)
    assert gap["se_pp"] == pytest.approx(np.hypot(rows["in"]["se_pp"], rows["out"]["se_pp"]), abs=1e-3)
    assert any("1 of its 232 tasks are in neither run" in w for w in res["warnings"])


def _import(cli, tmp_path, name, lines, stack=None):
    r = cli("import", "jsonl", str(write_jsonl(tmp_path / f"{name}.jsonl", lines, stack)), "--run", name)
    assert r.exit_code == 0, r.stderr


def test_warnings_for_stack_attempts_and_unpaired(cli, tmp_path):
    rng = np.random.default_rng(4)
    probs = rng.beta(0.5, 0.5, 200)
    base = simulate_run(probs, 2, rng)
    cand = [x for x in simulate_run(probs, 1, rng) if x["task_id"] not in task_ids(200)[:40]]
    cand += [{"task_id": task_ids(200)[50], "attempt": 1, "outcome": "infra_error"}]
    _import(cli, tmp_path, "b", base, {"image": "swe:v1", "engine": "vllm", "engine_version": "0.6", "gpu": "h100"})
    _import(cli, tmp_path, "c", cand, {"image": "swe:v2", "engine": "vllm", "engine_version": "0.7", "model": "x"})
    res = json.loads(cli("compare", "b", "c", "--json").stdout)
    text = "\n".join(res["warnings"])
    assert "different stack" in text and "image (swe:v1 vs swe:v2)" in text and "engine_version (0.6 vs 0.7)" in text
    assert "gpu (h100 vs -)" in text and "model" not in text and "engine (" not in text
    assert "different attempt counts" in text
    assert "40 of 200 tasks not paired" in text and "only in base 40" in text
    assert "'c': judged 160/161 trials" in text
    (row,) = res["comparisons"]
    assert row["tasks_paired"] == 160 and row["unpaired"]["only_in_base"] == 40


def test_picked_from_widens_and_adjusts(cli, tmp_path):
    rng = np.random.default_rng(9)
    probs = rng.beta(0.5, 0.5, 300)
    _import(cli, tmp_path, "b", simulate_run(probs, 1, rng))
    _import(cli, tmp_path, "c", simulate_run(np.clip(probs + 0.08, 0, 1), 1, rng))
    one = json.loads(cli("compare", "b", "c", "--json", "--family", "none").stdout)["comparisons"][0]
    five = json.loads(cli("compare", "b", "c", "--picked-from", "5", "--json", "--family", "none").stdout)
    row = five["comparisons"][0]
    assert row["ci_level"] == pytest.approx(0.99)
    assert row["ci_adjusted_pp"][0] < one["ci_pp"][0] and row["ci_adjusted_pp"][1] > one["ci_pp"][1]
    assert row["p_adjusted"] == pytest.approx(min(1.0, 5 * one["p_value"]))
    assert any("picked among 5" in w for w in five["warnings"])
    fam = json.loads(cli("compare", "b", "c", "--picked-from", "5", "--json").stdout)  # in its family: look 1
    assert fam["looks"]["look"] == {"c": 1} and fam["comparisons"][0]["ci_level"] == pytest.approx(1 - 0.05 / 2 / 5)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("compare", "nope", "c"), "no run named 'nope'"),
        (("compare", "b", "b"), "is the baseline itself"),
        (("compare", "b", "other"), "no graded task in common"),
        (("compare", "b", "c", "--exclude-repo", "zzz"), "--exclude-repo zzz"),
        (("compare", "b", "c", "--min-diff", "-1"), "--min-diff"),
        (("compare", "b", "c", "--split", "SPLIT"), "none of its 2 tasks"),
        (("compare", "b", "c", "--split", "MISSING"), "no such task list"),
        (("compare", "b", "c", "c"), "named twice"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli, tmp_path, args, message):
    rng = np.random.default_rng(1)
    probs = rng.random(20)
    _import(cli, tmp_path, "b", simulate_run(probs, 1, rng))
    _import(cli, tmp_path, "c", simulate_run(probs, 1, rng))
    _import(cli, tmp_path, "other", [{"task_id": "zeta__x-1", "resolved": True}])
    split = tmp_path / "split.txt"
    split.write_text("no__such-1\nno__such-2\n")
    args = tuple(str(split) if a == "SPLIT" else str(tmp_path / "missing.txt") if a == "MISSING" else a for a in args)
    r = cli(*args)
    assert r.exit_code == 2
    assert message in r.stderr and r.stderr.count("\n") == 1
    assert r.stdout == ""


def test_runs_sharing_no_graded_task(cli, tmp_path):
    _import(
        cli, tmp_path, "x", [{"task_id": "a__b-1", "outcome": "infra_error"}, {"task_id": "a__b-2", "resolved": True}]
    )
    _import(cli, tmp_path, "y", [{"task_id": "a__b-1", "resolved": True}, {"task_id": "a__b-3", "resolved": True}])
    r = cli("compare", "x", "y")
    assert r.exit_code == 2 and "no graded task in common" in r.stderr


def test_one_task_in_common_is_refused(cli, tmp_path):
    _import(cli, tmp_path, "x", [{"task_id": "a__b-1", "resolved": True}, {"task_id": "a__b-2", "resolved": False}])
    _import(cli, tmp_path, "y", [{"task_id": "a__b-1", "resolved": True}, {"task_id": "a__b-3", "resolved": True}])
    r = cli("compare", "x", "y", "--json")
    assert r.exit_code == 2 and "only 1 graded task in common" in r.stderr and r.stdout == ""


def test_identical_runs_give_strict_json(cli, tmp_path):
    lines = [{"task_id": f"a__b-{i}", "resolved": i % 2 == 0} for i in range(6)]
    _import(cli, tmp_path, "x", lines)
    _import(cli, tmp_path, "y", lines)
    r = cli("compare", "x", "y", "--json")
    (row,) = json.loads(r.stdout, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))["comparisons"]
    assert row["diff_pp"] == 0 and row["p_value"] == 1.0 and row["claim"] is False and row["ties"] == 6


def test_stack_diff_compares_per_task_maps_on_shared_tasks():
    from trialbook.stats.caveats import stack_diff

    full = {"agent": "nop", "image": None, "images": {"t1": "i1", "t2": "i2"}, "verifier_hash": "h12",
            "verifier_hashes": {"t1": "a", "t2": "b"}, "engine_version": "27"}  # fmt: skip
    subset = {"agent": "oracle", "image": "i1", "images": {"t1": "i1"}, "verifier_hash": "h1",
              "verifier_hashes": {"t1": "a"}, "engine_version": "27"}  # fmt: skip
    assert stack_diff(full, subset) == []  # other tasks, other agent: nothing to warn about
    changed = {**subset, "verifier_hashes": {"t1": "zz"}, "engine_version": "28"}
    assert stack_diff(full, changed) == [
        "engine_version (27 vs 28)",
        "verifier_hashes (1 shared tasks differ, e.g. t1: a vs zz)",
    ]
    assert stack_diff({"image": "x"}, {"image": "y", "gpu": "h100"}) == ["image (x vs y)", "gpu (- vs h100)"]

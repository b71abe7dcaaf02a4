"""Issue 15 in `compare`: --metric reward on partial rewards, ties within 1e-9, few-task CIs clipped,
pass^k, the ungraded-trials sensitivity line, --list / --exclude-tasks, reading commands and a missing ledger."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from paths import HARBOR_JOBS
from smallsample import adjusted, adjusted_pp


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def jcompare(cli, *args: str) -> dict:
    r = cli("compare", *args, "--json")
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_real_harbor_partial_rewards_compare_by_mean_reward(cli):
    for job in ("gpt52-codex-stacked-v2", "sonnet46-stacked-v2"):
        assert cli("import", "harbor", str(HARBOR_JOBS / job)).exit_code == 0
    resolved = jcompare(cli, "gpt52-codex-stacked-v2", "sonnet46-stacked-v2")
    row = resolved["comparisons"][0]
    assert row["diff_pp"] == 0.0  # every reward is partial: nothing is resolved in either run
    assert any("partial rewards" in w and "'sonnet46-stacked-v2' 2" in w for w in resolved["warnings"])
    res = jcompare(cli, "gpt52-codex-stacked-v2", "sonnet46-stacked-v2", "--metric", "reward")
    row = res["comparisons"][0]
    d = np.array([0.5252 - 0.292, 0.9667 - 0.9])  # full-stack, tier0-smoke-test
    assert row["diff_pp"] == pytest.approx(100 * d.mean(), abs=1e-3)
    assert row["ci_pp"] == pytest.approx(adjusted_pp(d), abs=1e-3)  # the small-sample interval of 2 tasks
    assert row["few_tasks"]
    assert (row["wins"], row["losses"], row["ties"]) == (2, 0, 0)
    assert not any("partial rewards" in w for w in res["warnings"])
    human = cli("compare", "gpt52-codex-stacked-v2", "sonnet46-stacked-v2", "--metric", "reward").stdout
    assert "mean reward" in human and "few tasks" in human and "+14.99" in human


def _pair(tmp_path: Path, cli, base: list[dict], cand: list[dict]) -> None:
    assert cli("import", "jsonl", str(write(tmp_path / "b.jsonl", base)), "--run", "b").exit_code == 0
    assert cli("import", "jsonl", str(write(tmp_path / "c.jsonl", cand)), "--run", "c").exit_code == 0


def test_reward_ties_within_1e9_and_sum_rounding(cli, tmp_path):
    # 0.1 + 0.2 (two attempts) and 0.3 + 0.0 differ by 5.6e-17 in floating point: a tie, not a win
    base = [{"task_id": f"t{i}", "reward": r} for i in range(3) for r in (0.1, 0.2)]
    cand = [{"task_id": f"t{i}", "reward": r} for i in range(3) for r in (0.3, 0.0)]
    _pair(tmp_path, cli, base, cand)
    row = jcompare(cli, "b", "c", "--metric", "reward")["comparisons"][0]
    assert (row["wins"], row["losses"], row["ties"]) == (0, 0, 3)


def test_unknown_metric_is_one_line(cli, tmp_path):
    _pair(tmp_path, cli, [{"task_id": "a", "resolved": True}] * 2, [{"task_id": "a", "resolved": True}] * 2)
    r = cli("compare", "b", "c", "--metric", "accuracy")
    assert r.exit_code == 2 and "--metric must be one of resolved, reward" in r.stderr


def _many(n: int, rate_b: float, rate_c: float, seed: int = 0, ungraded: int = 0) -> tuple[list, list]:
    rng = np.random.default_rng(seed)
    base = [{"task_id": f"t{i:03d}", "resolved": bool(rng.random() < rate_b)} for i in range(n) for _ in range(2)]
    cand = [{"task_id": f"t{i:03d}", "resolved": bool(rng.random() < rate_c)} for i in range(n) for _ in range(2)]
    for i in range(ungraded):  # candidate infra errors on the first tasks, both attempts
        cand[2 * i] = cand[2 * i + 1] = {"task_id": f"t{i:03d}", "outcome": "infra_error"}
    return base, cand


def test_few_tasks_clip_and_label_only_below_30(cli, tmp_path):
    base, cand = _many(40, 0.5, 0.5)
    _pair(tmp_path, cli, base, cand)
    row = jcompare(cli, "b", "c")["comparisons"][0]
    assert row["few_tasks"] is False
    few = tmp_path / "few.txt"
    few.write_text("\n".join(f"t{i:03d}" for i in range(3)))
    row = jcompare(cli, "b", "c", "--exclude-tasks", str(few))["comparisons"][0]
    assert row["tasks_paired"] == 37 and not row["few_tasks"]
    keep = tmp_path / "keep.txt"
    keep.write_text("\n".join(f"t{i:03d}" for i in range(3, 40)))
    row = jcompare(cli, "b", "c", "--exclude-tasks", str(keep))["comparisons"][0]
    assert row["tasks_paired"] == 3 and row["few_tasks"]
    assert row["ci_pp"][0] >= -100 and row["ci_pp"][1] <= 100
    assert row["ci_adjusted_pp"][0] >= -100 and row["ci_adjusted_pp"][1] <= 100
    assert "pass^2" in row["pass_at_k"] and "pass@2" in row["pass_at_k"]
    for k, v in row["pass_at_k"].items():  # the pass@k / pass^k differences are clipped and labelled alike
        assert v["few_tasks"] and -100 <= v["ci_pp"][0] <= v["ci_pp"][1] <= 100, k
    shown = cli("compare", "b", "c", "--exclude-tasks", str(keep)).stdout
    lines = [ln for ln in shown.splitlines() if ln.lstrip().startswith("pass")]
    assert len(lines) >= 2 and all("] few tasks" in ln for ln in lines), shown
    wide = jcompare(cli, "b", "c", "--exclude-tasks", str(few))["comparisons"][0]["pass_at_k"]
    assert not any(v["few_tasks"] for v in wide.values())


def test_sensitivity_line_gives_the_bounds(cli, tmp_path):
    base, cand = _many(60, 0.5, 0.5, ungraded=20)
    _pair(tmp_path, cli, base, cand)
    res = jcompare(cli, "b", "c")
    sens = res["sensitivity"]
    assert sens["ungraded_trials"] == {"b": 0, "c": 40}
    v = sens["verdicts"]["c"]
    assert v["dropped"]["tasks_paired"] == 40
    assert v["as_failures"]["tasks_paired"] == v["as_successes"]["tasks_paired"] == 60
    assert v["as_failures"]["diff_pp"] < v["dropped"]["diff_pp"] < v["as_successes"]["diff_pp"]
    # the bound "as successes" is a claim here, "as failures" is not: the verdict hangs on them
    assert v["as_successes"]["claim"] and not v["as_failures"]["claim"]
    human = cli("compare", "b", "c").stdout
    assert "sensitivity to ungraded trials (c 40)" in human and "as failures" in human
    show = json.loads(cli("show", "c", "--json").stdout)
    assert show["sensitivity"] == {"dropped": pytest.approx(show["resolved_pct"]),
                                   "as_failures": pytest.approx(100 * show["resolved"] / show["trials"], abs=0.01),
                                   "as_successes": pytest.approx(100 * (show["resolved"] + 40) / show["trials"],
                                                                 abs=0.01)}  # fmt: skip
    assert "if ungraded trials count as failures" in cli("show", "c").stdout


def test_list_wins_losses_feed_exclude_tasks(cli, tmp_path):
    base, cand = _many(40, 0.4, 0.6, seed=2)
    _pair(tmp_path, cli, base, cand)
    row = jcompare(cli, "b", "c")["comparisons"][0]
    listed = cli("compare", "b", "c", "--list", "losses").stdout.splitlines()
    assert listed[0].startswith(f"# losses of c over b: {row['losses']} tasks")
    assert listed[1:] == row["tasks_lost"] and len(row["tasks_lost"]) == row["losses"]
    (tmp_path / "losses.txt").write_text("\n".join(listed))
    after = jcompare(cli, "b", "c", "--exclude-tasks", str(tmp_path / "losses.txt"))["comparisons"][0]
    assert after["losses"] == 0 and after["wins"] == row["wins"]
    assert cli("compare", "b", "c", "--list", "draws").exit_code == 2


@pytest.mark.parametrize(
    "args",
    [("runs",), ("show", "x"), ("compare", "a", "b"), ("export", "x", "--jsonl", "out.jsonl"),
     ("audit", "x"), ("regrade", "x"), ("train", "report", "x"), ("attribute", "a", "b"),
     ("plan", "--tasks", "10", "--repeats", "1", "--effect", "5", "--from-run", "x"),
     ("prereg", "check", "plan.yaml", "--base", "a", "--cand", "b"), ("runs", "delete", "x"),
     ("runs", "rename", "x", "y"), ("resume", "x"), ("rerun", "x", "--where", "resolved"),
     ("report", "--html", "r.html", "--compare", "a,b")],
)  # fmt: skip
def test_reading_commands_refuse_a_missing_ledger(cli, db, args):
    r = cli(*args)
    assert r.exit_code == 2 and "no ledger at" in r.stderr and r.stderr.count("\n") == 1
    assert not Path(db).exists()


def test_writing_commands_create_the_ledger(cli, db, tmp_path):
    assert cli("import", "jsonl", str(write(tmp_path / "a.jsonl", [{"task_id": "a", "reward": 1}])), "--run", "a")\
        .exit_code == 0  # fmt: skip
    assert Path(db).is_file()


def test_plan_metric_reward_uses_the_reward_variance(cli, tmp_path):
    rng = np.random.default_rng(5)
    rewards = rng.uniform(0, 1, size=(30, 3)).round(3)
    rows = [{"task_id": f"t{i:02d}", "reward": float(r)} for i, task in enumerate(rewards) for r in task]
    assert cli("import", "jsonl", str(write(tmp_path / "r.jsonl", rows)), "--run", "r").exit_code == 0
    args = ("plan", "--tasks", "30", "--repeats", "3", "--effect", "5", "--from-run", "r", "--json")
    reward = json.loads(cli(*args, "--metric", "reward").stdout)
    assert reward["metric"] == "reward"
    # one run: sampling Var(d) at K=1 is twice the mean within-task variance of the rewards
    assert reward["variance"]["sampling_k1"] == pytest.approx(2 * rewards.var(axis=1, ddof=1).mean(), abs=1e-5)
    assert not any("partial rewards" in n for n in reward["notes"])
    resolved = json.loads(cli(*args).stdout)
    assert resolved["variance"]["sampling_k1"] == 0.0  # no reward is 1.0: every attempt unresolved
    partial = int(((rewards > 0) & (rewards < 1)).sum())
    assert any(f"count as unresolved under --metric resolved: 'r' {partial} graded" in n for n in resolved["notes"])


def test_reward_metric_keeps_the_adjustment_and_claim_rule(cli, tmp_path):
    rng = np.random.default_rng(11)
    base = rng.uniform(0, 0.8, 40).round(3)
    cands = {"c1": np.clip(base + rng.normal(0.10, 0.1, 40), 0, 1).round(3),
             "c2": np.clip(base + rng.normal(0.01, 0.1, 40), 0, 1).round(3)}  # fmt: skip
    for name, rewards in (("b", base), *cands.items()):
        rows = [{"task_id": f"t{i:02d}", "reward": float(r)} for i, r in enumerate(rewards)]
        assert cli("import", "jsonl", str(write(tmp_path / f"{name}.jsonl", rows)), "--run", name).exit_code == 0
    res = jcompare(cli, "b", "c1", "c2", "--metric", "reward", "--family", "none")  # Holm over the two
    rows = {r["candidate"]: r for r in res["comparisons"]}
    ps = {}
    for name, rewards in cands.items():
        d = rewards - base
        row = rows[name]
        assert row["diff_pp"] == pytest.approx(100 * d.mean(), abs=1e-3) and row["ci_level"] == 0.975
        lo_w, hi_w, _, _ = adjusted(d, 0.975)  # Bonferroni for 2 candidates; one attempt each: c = 1
        ps[name] = adjusted(d)[3]
        assert row["ci_adjusted_pp"] == pytest.approx([100 * lo_w, 100 * hi_w], abs=1e-3)
        assert row["claim"] == (row["diff_pp"] >= 4 and row["ci_adjusted_pp"][0] > 0)
    lo, hi = sorted(ps, key=ps.get)
    assert rows[lo]["p_adjusted"] == pytest.approx(min(1, 2 * ps[lo]), abs=1e-4)  # Holm
    assert rows[hi]["p_adjusted"] == pytest.approx(max(min(1, 2 * ps[lo]), ps[hi]), abs=1e-4)
    assert rows["c1"]["claim"] and not rows["c2"]["claim"]

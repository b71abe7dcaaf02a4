"""Difference-in-differences: `new_task_pct` is the first-encounter rate of tasks first seen in the weight
versions of the k-th encounters, on a hand-built run whose rates are known."""

from __future__ import annotations

import json
from pathlib import Path


def _rows(task: str, epoch: int, resolved: int, failed: int = 0, ungraded: int = 0) -> list[dict]:
    at = {"task_id": f"org__repo-{task}", "step": 10 * epoch + 1, "wv": 10 * epoch, "epoch": epoch}
    return ([{**at, "reward": 1.0}] * resolved + [{**at, "reward": 0.0}] * failed
            + [{**at, "outcome": "verifier_timeout"}] * ungraded)  # fmt: skip


def _run() -> list[dict]:
    rows = []
    # T1..T4: first seen in epoch 0 (wv 0), then solved every time in epochs 1 and 2
    for t, solved in (("1", 0), ("2", 0), ("3", 1), ("4", 0)):
        rows += _rows(t, 0, solved, 2 - solved) + _rows(t, 1, 2) + _rows(t, 2, 2)
    # N1..N4: first seen in epoch 1 (wv 10) at 1/4, 0/1, 1/1, 0/2; solved when seen again in epoch 2
    for t, (solved, failed) in (("11", (1, 3)), ("12", (0, 1)), ("13", (1, 0)), ("14", (0, 2))):
        rows += _rows(t, 1, solved, failed) + _rows(t, 2, 1)
    rows += _rows("19", 1, 0, ungraded=2)  # first seen in epoch 1 but never graded: not a rate
    # M1, M2: first seen in epoch 2 (wv 20) at 1/2 and 1/1
    rows += _rows("21", 2, 1, 1) + _rows("22", 2, 1)
    return rows


def test_new_task_pct_averages_first_encounters_of_tasks_new_in_those_weight_versions(cli, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _run()))
    assert cli("import", "jsonl", str(path), "--run", "did", "--kind", "train").exit_code == 0
    res = cli("train", "report", "did", "--json")
    assert res.exit_code == 0, res.stderr
    rows = {r["k"]: r for r in json.loads(res.stdout)["encounters"]}
    # k = 2: second encounters of T (wv 10) and N (wv 20); tasks first seen in wv 10..20 and graded there:
    # N1..N4 and M1, M2, a task mean of (0.25 + 0 + 1 + 0 + 0.5 + 1) / 6 (per trajectory it would be 4/11)
    assert (rows[2]["new_tasks"], rows[2]["new_task_pct"]) == (6, 45.83)
    # k = 3: third encounters of T only (wv 20): the new tasks of wv 20 are M1 and M2, (0.5 + 1) / 2
    assert (rows[3]["new_tasks"], rows[3]["new_task_pct"]) == (2, 75.0)
    # the re-encountered tasks themselves: T and N at k = 2, first (0 0 0.5 0 0.25 0 1 0) vs k-th (all 1)
    assert (rows[2]["tasks"], rows[2]["first_pct"], rows[2]["kth_pct"]) == (8, 21.88, 100.0)
    assert (rows[3]["tasks"], rows[3]["first_pct"], rows[3]["kth_pct"]) == (4, 12.5, 100.0)

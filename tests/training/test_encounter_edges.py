"""The encounter table on a hand-built run whose every number is worked out in the comments: an epoch
spread over two weight versions is one encounter, ungraded encounters (first, middle, whole k), a k
with no graded pair between two with some, and last-minus-first dropping a task whose first
encounter was never graded."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from smallsample import adjusted
from trialbook.training.encounters import encounter_groups, encounter_table
from trialbook.training.load import TrainData

# (task, epoch, wv, reward or None for an ungraded trajectory)
ROWS = [
    ("A", 0, 0, 1.0), ("A", 0, 1, 0.0),  # A: epoch 0 over weight versions 0 and 1: one encounter, 0.5
    ("A", 1, 2, 1.0),  # 1.0
    ("A", 2, 4, None),  # ungraded
    ("A", 3, 6, 0.0),  # 0.0
    ("B", 0, 0, None),  # B: first encounter ungraded
    ("B", 1, 2, 1.0), ("B", 2, 4, 0.0), ("B", 3, 6, 1.0),
    ("C", 1, 3, 0.0),  # C: new in epoch 1 (weight version 3), 0.0
    ("C", 2, 5, 1.0), ("C", 2, 5, 1.0), ("C", 2, 5, 0.0),  # 2/3
    ("D", 0, 0, 0.0), ("D", 1, 2, 1.0), ("D", 2, 4, None), ("D", 3, 6, 1.0),
    ("D", 4, 8, None),  # D: its last encounter is ungraded
]  # fmt: skip


def _data(rows: list[tuple[str, int, int, float | None]]) -> TrainData:
    names = sorted({r[0] for r in rows})
    graded = np.array([r[3] is not None for r in rows])
    size = len(rows)
    return TrainData(
        n=np.ones(size, dtype=np.int64),
        task=np.array([names.index(r[0]) for r in rows], dtype=np.int32),
        task_names=names,
        repo=np.zeros(size, dtype=np.int32),
        repo_names=["o/r"],
        outcome=np.zeros(size, dtype=np.int8),
        graded=graded,
        resolved=np.array([r[3] == 1.0 for r in rows]),
        partial=np.zeros(size, dtype=bool),
        wins=np.array([float(r[3] == 1.0) for r in rows]),  # the resolved metric: n = 1 per row
        p2p=np.zeros(size, dtype=bool),
        step=np.array([r[2] for r in rows], dtype=np.int64),
        wv=np.array([r[2] for r in rows], dtype=np.int64),
        epoch=np.array([r[1] for r in rows], dtype=np.int64),
    )


def test_encounter_table_by_hand():
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # ungraded encounters are expected, not 0/0 warnings
        rows, last = encounter_table(_data(ROWS))
    # k = 3 has no task graded at its 1st and 3rd encounter, k = 5 only D's ungraded 5th
    assert [r["k"] for r in rows] == [2, 4]
    two, four = rows
    # k = 2: A 1.0 - 0.5, C 2/3 - 0, D 1 - 0 (B's first is ungraded)
    ci = adjusted([0.5, 2 / 3, 1.0])  # 3 tasks: the small-sample interval, clipped to +100 and flagged
    two_ci = [round(100 * ci[0], 2), round(100 * min(1, ci[1]), 2)]
    assert two == {"k": 2, "tasks": 3, "diff_pp": 72.22, "ci_pp": two_ci,
                   "first_pct": 16.67, "kth_pct": 88.89, "few_tasks": True,
                   # 2nd encounters at weight versions 2..5; first seen there and graded: C at 0%
                   "new_tasks": 1, "new_task_pct": 0.0}  # fmt: skip
    # k = 4: A 0.0 - 0.5, D 1 - 0; their weight version 6 saw no new task
    ci = adjusted([-0.5, 1.0])
    four_ci = [round(100 * max(-1, ci[0]), 2), round(100 * min(1, ci[1]), 2)]
    assert four == {"k": 4, "tasks": 2, "diff_pp": 25.0, "ci_pp": four_ci, "first_pct": 25.0, "kth_pct": 50.0,
                    "new_tasks": 0, "new_task_pct": None, "few_tasks": True}  # fmt: skip
    # A, B and D have 3 graded encounters; B's first is ungraded; D's last graded one is its 4th
    assert last == {"min_graded_encounters": 3, "tasks": 2, "diff_pp": 25.0, "ci_pp": four_ci, "few_tasks": True}


def test_encounter_groups_by_hand():
    g = encounter_groups(_data(ROWS))
    assert g.task.tolist() == [0] * 4 + [1] * 4 + [2] * 2 + [3] * 5
    assert g.rank.tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 0, 1, 2, 3, 4]
    # the earliest weight version of each encounter
    assert g.wv.tolist() == [0, 2, 4, 6, 0, 2, 4, 6, 3, 5, 0, 2, 4, 6, 8]
    assert g.first.tolist() == [0] * 4 + [4] * 4 + [8] * 2 + [10] * 5
    assert g.count.tolist() == [4] * 8 + [2] * 2 + [5] * 5
    graded = [0, 1, 3, 5, 6, 7, 8, 9, 10, 11, 13]
    assert g.score[graded].tolist() == pytest.approx([0.5, 1, 0, 1, 0, 1, 0, 2 / 3, 0, 1, 1])
    assert np.isnan(g.score[[2, 4, 12, 14]]).all()
    empty = encounter_groups(_data([]))
    assert [len(x) for x in vars(empty).values()] == [0] * 6


def test_without_epochs_an_encounter_is_a_weight_version():
    rows = [("A", -1, 3, 0.0), ("A", -1, 3, 1.0), ("A", -1, 7, 1.0), ("B", -1, 7, 0.0)]
    g = encounter_groups(_data(rows))
    assert g.rank.tolist() == [0, 1, 0] and g.wv.tolist() == [3, 7, 7]
    table, last = encounter_table(_data(rows))
    assert [(r["k"], r["tasks"], r["diff_pp"], r["new_tasks"], r["new_task_pct"]) for r in table] == [
        (2, 1, 50.0, 1, 0.0)
    ]
    assert last is None  # no task has 3 graded encounters


def test_no_trajectories_no_table():
    assert encounter_table(_data([])) == ([], None)


@pytest.mark.parametrize("shift", [0, 5])
def test_epochs_need_not_start_at_zero(shift):
    rows = [(t, e + shift, w, r) for t, e, w, r in ROWS]
    table, last = encounter_table(_data(rows))
    assert [r["k"] for r in table] == [2, 4] and table[0]["diff_pp"] == 72.22 and last["diff_pp"] == 25.0

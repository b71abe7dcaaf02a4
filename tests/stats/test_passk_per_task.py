"""pass@k over a run's tasks (`show`'s pass@k, computed per task in plain Python): which tasks count,
and lists that do not pair up. Expected values worked out by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest

from trialbook.stats.passk import pass_at_k, pass_hat_k, run_pass_at_k


def test_tasks_never_graded_are_left_out_of_the_typical_attempt_count() -> None:
    # graded attempts 2, 2, 0, 0, 0: the three ungraded tasks do not pull the median to 0
    out, tasks = run_pass_at_k([2, 2, 0, 0, 0], [1, 2, 0, 0, 0])
    assert tasks == {"pass@1": 2, "pass@2": 2, "pass^2": 2}
    assert out["pass@1"] == 75.0  # (1/2 + 2/2) / 2
    assert out["pass@2"] == 100.0  # each task has a success among its 2 attempts
    assert out["pass^2"] == 50.0  # only the second task succeeded twice


def test_a_task_graded_once_counts_for_pass_at_1_only() -> None:
    out, tasks = run_pass_at_k([2, 2, 1], [1, 2, 1])
    assert tasks == {"pass@1": 3, "pass@2": 2, "pass^2": 2}  # each k over its own, stated subset
    assert out["pass@1"] == pytest.approx(83.33)  # (0.5 + 1 + 1) / 3
    assert out["pass@2"] == 100.0  # the task graded once cannot reach k = 2
    assert out["pass^2"] == 50.0


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
def test_attempt_and_success_lists_of_different_lengths_are_refused(estimator) -> None:
    with pytest.raises(ValueError):
        estimator(np.array([3, 3]), np.array([1]), 1)  # no broadcasting of one task's count over two


def test_run_lists_of_different_lengths_are_refused() -> None:
    with pytest.raises(ValueError):
        run_pass_at_k([2, 2, 2], [1, 1])

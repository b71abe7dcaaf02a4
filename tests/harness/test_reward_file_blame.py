"""A reward file that test.sh may not have been the last to write, weighed against the verifier on the image as built
(verify/blame.untrusted_reward), without a race: the verdict a hostile change leaves is given, the baseline is a real
run of the task's verifier in a fresh container. The end-to-end cheats (tests/harness/cheats/reward_rewriter.sh,
reward_then_kill.sh) race test.sh's own write and the harness's kill, and may lose; these cannot."""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from trialbook.harness.trial.state import ImageRef, TrialState
from trialbook.sandbox import BoxSpec, DockerEngine, Sandbox
from trialbook.sandbox.docker import LABEL_RUN
from trialbook.tasks import TaskSpec
from trialbook.tasks.loader import load_task
from trialbook.verify import blame
from trialbook.verify.isolation import Grading
from trialbook.verify.notes import GradingNotes
from trialbook.verify.runner import Verdict

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
LINGERING = "#!/bin/bash\n( exec sleep 300 ) &\n"  # the task's own test.sh leaves a process (a test server, say)


@pytest.fixture
def tb() -> Iterator[tuple[DockerEngine, str]]:
    eng = DockerEngine()
    run = f"rwb-{secrets.token_hex(3)}"
    yield eng, run
    eng.clean(run, images=True)


def _task(tmp_path: Path, lingering: bool = False) -> TaskSpec:
    """plain-bugfix graded by its reward file (no test lists); its tests fail on the image as built."""
    task = tmp_path / ("lingering" if lingering else "plain")
    shutil.copytree(EXAMPLE, task)
    (task / "tests" / "config.json").unlink()
    if lingering:
        test_sh = task / "tests" / "test.sh"
        test_sh.write_text(test_sh.read_text().replace("#!/bin/bash\n", LINGERING, 1))
    return load_task(task)


def _judge(tb: tuple[DockerEngine, str], task: TaskSpec, verdict: Verdict) -> tuple[Grading, TrialState]:
    eng, run = tb
    image = ImageRef(*eng.ensure_image(task.task_id, None, task.dockerfile.parent, task.environment_hash, run, False))
    state = TrialState(image=image)

    def open_box(_k: int) -> Sandbox:
        name = f"tb-{run}-{secrets.token_hex(3)}"
        return eng.start(
            BoxSpec(image.reference, {LABEL_RUN: run}, task.cpus, task.memory_mb, task.pids_limit, False), name
        )

    grading = Grading(verdict=verdict)
    blame._BASELINES.clear()
    blame.untrusted_reward(task, open_box, grading, state)
    assert eng.containers(run) == [] and state.cleanup_error is None
    return grading, state


def test_a_reward_read_with_processes_the_change_left_is_graded_0(tb, tmp_path):
    left = Verdict(reward=1.0, graded_by="reward_file", outlived=1, exit_code=0, file_reward=1.0)
    grading, state = _judge(tb, _task(tmp_path), left)
    assert grading.verdict is not None and grading.verdict.reward == 0.0
    assert grading.error is not None and grading.error.kind == "OutlivedWithChangeError"
    assert state.tags == ["outlived_with_change"]
    assert grading.notes.without_change["outlived"] == 0 and grading.notes.without_change["end"] == "finished"


def test_a_reward_found_after_test_sh_was_killed_is_graded_as_killed(tb, tmp_path):
    killed = Verdict(reward=1.0, graded_by="reward_file", exit_code=137, file_reward=1.0)
    grading, state = _judge(tb, _task(tmp_path), killed)
    assert grading.verdict is not None and (grading.verdict.reward, grading.verdict.killed) == (0.0, True)
    assert grading.error is None and not state.tags  # run_trial tags a killed verdict `verifier_killed`
    assert (grading.notes.without_change["exit_code"] or 0) <= 128


def test_a_task_whose_own_tests_leave_a_process_keeps_the_grade(tb, tmp_path):
    left = Verdict(reward=1.0, graded_by="reward_file", outlived=1, exit_code=0, file_reward=1.0)
    grading, state = _judge(tb, _task(tmp_path, lingering=True), left)
    assert grading.verdict == left and grading.error is None and not state.tags
    assert grading.notes.without_change["outlived"] >= 1


def test_a_log_graded_per_test_or_a_zero_needs_no_baseline(tb, tmp_path):
    task = _task(tmp_path)
    for verdict in (
        Verdict(reward=1.0, graded_by="test_log", outlived=3, exit_code=0),
        Verdict(reward=0.0, graded_by="reward_file", outlived=3, exit_code=137, file_reward=0.0),
        Verdict(reward=1.0, graded_by="reward_file", exit_code=1, file_reward=1.0),
    ):
        grading, state = _judge(tb, task, verdict)
        assert grading.verdict == verdict and grading.notes == GradingNotes() and state == TrialState(image=state.image)

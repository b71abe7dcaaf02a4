"""The witness beside each graded try without a daemon (verify/witness.py): both runs' tests start together, a retry
meets a witness of its own, a witness that raises or is cut never holds the graded run (and leaves no grade), its box
is removed in every path; and which reward-file tasks are graded in one run instead (verify/onerun.py: test.sh reads a
pytest run's exit status alone), docs/threat-model.md."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from paths import EXAMPLES
from trialbook.outcomes import ErrorKind
from trialbook.sandbox import SandboxError
from trialbook.tasks import load_task
from trialbook.verify import blame
from trialbook.verify import witness as witnesses
from trialbook.verify.isolation import Grading
from trialbook.verify.notes import ErrorNote
from trialbook.verify.runner import Verdict, one_run, witnessable
from trialbook.verify.verdict_record import trial_tags

EXAMPLE = EXAMPLES / "plain-bugfix"
TASK = SimpleNamespace(verifier_timeout=5.0)


class Box:
    def __init__(self) -> None:
        self.stop = threading.Event()
        self.removed = False


def _grade(started: dict[str, float], boxes: list[Box], hold: float = 0.0):
    """A stand-in for isolation.grade: open the box, note when its tests would start, hold, close it."""

    def grade(task, open_box, close_box, tries=2, witness=False, footprint=None):  # noqa: ARG001
        box = open_box(0)
        boxes.append(box)
        started["witness" if witness else "graded"] = time.monotonic()
        try:
            box.stop.wait(hold)
            cut = box.stop.is_set()
        finally:
            close_box(box)
        return Grading(verdict=None if cut else Verdict(reward=0.0, graded_by="reward_file"))

    return grade


def _close(box: Box) -> None:
    box.removed = True


def test_every_graded_try_starts_with_a_witness_of_its_own_and_each_box_is_removed(monkeypatch) -> None:
    started: dict[str, float] = {}
    boxes: list[Box] = []
    monkeypatch.setattr(witnesses, "grade", _grade(started, boxes))
    opened: list[int] = []

    def open_witness(side: witnesses.SideBySide, k: int):
        def slow_open(_j: int) -> Box:
            opened.append(k)
            time.sleep(0.5)  # a cold container and its carry
            return side.begin(Box)()

        return slow_open

    tries = witnesses.Witnessed(TASK, threading.Event(), "t", open_witness, _close)  # type: ignore[arg-type]
    graded = tries.graded(lambda _k: Box())  # type: ignore[arg-type, return-value]
    for k in (0, 1):  # a retry too: never alone
        t = time.monotonic()
        graded(k)
        started["graded"] = time.monotonic()
        assert started["graded"] - t >= 0.4  # the graded try's tests waited for its witness's box
        got = tries.result()
        assert got.verdict is not None and got.verdict.reward == 0.0
        assert abs(started["graded"] - started["witness"]) < 0.2
    assert opened == [0, 1]  # a fresh witness (its own container) for each try
    assert boxes and all(b.removed for b in boxes)


def test_a_witness_that_raises_never_holds_the_graded_run_and_leaves_no_grade(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(witnesses, "grade", _grade({}, []))

    def broken(_side: witnesses.SideBySide, _k: int):
        def fail(_j: int) -> Box:
            raise SandboxError("the daemon went away")

        return fail

    tries = witnesses.Witnessed(TASK, threading.Event(), "t", broken, _close)  # type: ignore[arg-type]
    t = time.monotonic()
    tries.graded(lambda _k: Box())(0)  # type: ignore[arg-type, return-value]
    assert time.monotonic() - t < 1.0
    assert "SandboxError: the daemon went away" in (tries.result().notes.raised or "")
    task = load_task(_reward_file_task(tmp_path, "cd /testbed\npython3 -m pytest -rA tests/test_stats.py\nrc=$?"))
    grading = Grading(verdict=Verdict(reward=1.0, graded_by="reward_file"))
    state = SimpleNamespace(tags=[], cleanup_error=None, workdir=None, image_id="x")
    blame.unwitnessed_reward(task, None, grading, state, tries.result)  # type: ignore[arg-type]
    # no witness's verdict, no grade: the trial ends with the witness's error (ungraded), never resolved unwitnessed
    assert grading.verdict is None and grading.error is not None and grading.error.kind == "DaemonError"
    assert grading.notes.witness is not None
    assert grading.notes.witness["reward"] is None and "raised" in grading.notes.witness


@pytest.mark.parametrize(
    ("witness", "reward", "tag"),
    [
        (Verdict(reward=0.0, graded_by="reward_file", canary_seen="failed"), 1.0, None),  # truthful: the grade stands
        (Verdict(reward=0.0, graded_by="reward_file", canary_seen="failed", rewards_not_files=["reward.txt"]), 0.0,
         "reward_not_a_file"),  # the change left a folder at the reward path in the witness only
        (Verdict(reward=1.0, graded_by="reward_file", canary_seen="passed"), 0.0, "runner_subverted"),
        (None, None, None),  # no verdict: no grade
    ],
)  # fmt: skip
def test_what_the_witness_says_decides(tmp_path: Path, witness: Verdict | None, reward: float | None, tag) -> None:
    task = load_task(_reward_file_task(tmp_path, "cd /testbed\npython3 -m pytest -rA tests/test_stats.py\nrc=$?"))
    grading = Grading(verdict=Verdict(reward=1.0, graded_by="reward_file"))
    state = SimpleNamespace(tags=[], cleanup_error=None, workdir=None, image_id="x")
    timeout = ErrorNote(ErrorKind.VERIFIER_TIMEOUT, "ran past its 30 s limit")
    control = Grading(verdict=witness, error=None if witness else timeout)
    blame.unwitnessed_reward(task, None, grading, state, lambda: control)  # type: ignore[arg-type]
    got = grading.verdict
    assert (got.reward if got else None) == reward
    if witness is None:
        assert grading.error is not None and grading.error.kind == "VerifierTimeoutError"
    tags = trial_tags(got, False, state.tags)
    assert tag is None or tag in tags


@pytest.mark.parametrize("how", ["cancel", "stop"])
def test_a_cut_witness_ends_at_once_and_its_box_is_removed(monkeypatch, how: str) -> None:
    boxes: list[Box] = []
    monkeypatch.setattr(witnesses, "grade", _grade({}, boxes, hold=30.0))
    stop = threading.Event()
    side = witnesses.SideBySide(TASK, stop)  # type: ignore[arg-type]
    side.start(lambda _k: side.begin(Box)(), _close)
    side.meet(lambda _k: Box(), 0)  # type: ignore[arg-type, return-value]
    t = time.monotonic()
    if how == "cancel":  # not needed (the graded run did not resolve), or the trial raised
        side.cancel()
    else:  # the run's deadline or interrupt
        stop.set()
        assert side.result().verdict is None
    assert time.monotonic() - t < 2.0
    assert boxes and all(b.removed for b in boxes)


@pytest.mark.parametrize(
    ("script", "one"),
    [
        ("cd /testbed\npython3 -m pytest -rA tests/test_stats.py\nrc=$?\necho $(( rc == 0 )) > /logs/verifier/r", True),
        ("cd /testbed\nif python3 -m pytest tests/test_stats.py; then echo 1 > /logs/verifier/reward.txt; fi", True),
        ("cd /testbed\npython3 -m pytest tests/test_stats.py | tee o\ngrep -q '3 passed' o && echo 1 > r", False),
        ("cd /testbed\npython3 -m pytest --junitxml=j.xml tests/test_stats.py\npython3 /tests/score.py j.xml", False),
        ("cd /testbed\npython3 -m pytest tests/test_stats.py -x -k 'a and b'\nrc=$?", False),  # not witnessable
        # pytest in the script, but the command the canaries go before is unittest's: no junit report for root to read
        ("cd /testbed\npip install pytest\npython3 -m unittest tests/test_stats.py; rc=$?\necho $rc", False),
    ],
)  # fmt: skip
def test_one_run_only_where_test_sh_reads_a_pytest_runs_exit_status_alone(
    tmp_path: Path, script: str, one: bool
) -> None:
    task = load_task(_reward_file_task(tmp_path, script))
    # graded in one run that is its own witness (verify/onerun.py); elsewhere, where a canary can be planted, a
    # witness run beside each graded try
    assert one_run(task) is one and witnesses.alongside(task) is (witnessable(task) and not one)


def _reward_file_task(tmp: Path, script: str) -> Path:
    task_dir = tmp / "task"
    shutil.copytree(EXAMPLE, task_dir)
    (task_dir / "tests" / "config.json").unlink()
    (task_dir / "tests" / "test.sh").write_text("#!/bin/bash\n" + script + "\n")
    return task_dir

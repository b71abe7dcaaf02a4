"""The verifier: after the agent, copy `tests/` in, run `tests/test.sh` with its timeout, grade.

The agent never sees the tests (they are copied in only now, over anything the agent left at
/tests), and stale reward files are deleted first so an old reward can never be read back.
When `tests/config.json` lists FAIL_TO_PASS / PASS_TO_PASS, the test log is graded per test
(`trialbook.verify.grading`); otherwise the reward comes from /logs/verifier/reward.txt or
reward.json.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from trialbook.importers.harbor import pick_reward
from trialbook.sandbox import Sandbox
from trialbook.tasks import TaskSpec

TESTS_DIR = "/tests"
LOG_DIR = "/logs/verifier"
PREPARE_TIMEOUT_S = 60.0


class VerifierTimeoutError(Exception):
    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class RewardFileNotFoundError(Exception):
    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class Verdict(BaseModel):
    reward: float
    graded_by: str  # "test_log" or "reward_file"
    tests: dict[str, dict[str, str]] | None = None
    p2p_regression: bool = False
    file_reward: float | None = None
    exit_code: int | None = None
    log: str = ""
    duration_s: float = 0.0


def _grader() -> Any:
    """`grade_test_log` from trialbook.verify.grading when that module is available, else None."""
    try:
        from trialbook.verify.grading import grade_test_log
    except ImportError:
        return None
    return grade_test_log


def read_reward(sandbox: Sandbox) -> float | None:
    text = sandbox.read_file(f"{LOG_DIR}/reward.txt")
    if text is not None and text.strip():
        try:
            return float(text.decode().strip().split()[0])
        except ValueError:
            return None
    raw = sandbox.read_file(f"{LOG_DIR}/reward.json")
    if raw is not None:
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            return None
        if isinstance(data, dict):
            return pick_reward(data)
        if isinstance(data, int | float):
            return float(data)
    return None


def verify(sandbox: Sandbox, task: TaskSpec, timeout: float) -> Verdict:
    prep = f"rm -rf {TESTS_DIR} {LOG_DIR} && mkdir -p {LOG_DIR}"
    sandbox.exec(["sh", "-c", prep], timeout=PREPARE_TIMEOUT_S)
    sandbox.put_dir(task.tests_dir, TESTS_DIR)
    res = sandbox.exec(["bash", f"{TESTS_DIR}/test.sh"], timeout=timeout)
    if res.timed_out:
        raise VerifierTimeoutError(f"tests/test.sh ran past its {timeout:g} s limit", res.output)
    file_reward = read_reward(sandbox)
    grade = _grader()
    has_lists = task.fail_to_pass is not None or task.pass_to_pass is not None
    if has_lists and grade is not None:
        graded = grade(res.output, task.repo, task.fail_to_pass or [], task.pass_to_pass or [], task.task_id)
        return Verdict(
            reward=1.0 if graded.resolved else 0.0,
            graded_by="test_log",
            tests=graded.tests,
            p2p_regression=bool(graded.p2p_regression),
            file_reward=file_reward,
            exit_code=res.exit_code,
            log=res.output,
            duration_s=res.duration_s,
        )
    if file_reward is None:
        raise RewardFileNotFoundError(
            f"tests/test.sh exited {res.exit_code} without writing {LOG_DIR}/reward.txt or reward.json", res.output
        )
    return Verdict(
        reward=file_reward,
        graded_by="reward_file",
        file_reward=file_reward,
        exit_code=res.exit_code,
        log=res.output,
        duration_s=res.duration_s,
    )

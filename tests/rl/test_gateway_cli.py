"""`python -m trialbook.rl.gateway` (a shared gateway for trainers in other processes): bad input is one line and
exit 2, never a traceback. (Serving the real engine is tests/rl/test_gateway_live.py's and test_verifiers_env.py's.)"""

from __future__ import annotations

import subprocess
import sys

from trialbook.agents.llama import free_port


def _gateway(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trialbook.rl.gateway", *args], capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_an_engine_that_does_not_answer_is_one_line_and_exit_2() -> None:
    out = _gateway("--engine", f"http://127.0.0.1:{free_port()}/v1")
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.count("\n") == 1 and "unreachable" in out.stderr


def test_a_missing_engine_flag_is_a_usage_error() -> None:
    out = _gateway()
    assert out.returncode == 2 and "--engine" in out.stderr and "Traceback" not in out.stderr

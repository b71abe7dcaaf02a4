"""What a run says when it goes wrong, through the real entry point in Docker: an agent's exception is a cause in
`trials` and `log` with its traceback kept; a model server that fails every call trips the circuit breaker after N
trials (one line, exit 1, resume runs the rest); a run writing to a file (nohup, Slurm, CI) writes progress lines
before it ends; SIGINT prints how many trials are recorded and the resume command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from httpd import LocalServer
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
MAIN = [sys.executable, "-c", "from trialbook.cli import main; main()"]

BOOM = """
class Boom:
    name = "boom"

    def run(self, sandbox, task, timeout):
        settings = {}
        return settings["missing_field"]  # a bug in the agent: KeyError
"""


def test_an_agents_exception_is_its_trials_cause_with_the_traceback(engine, cli, db: str, tmp_path: Path) -> None:
    agent = tmp_path / "boom.py"
    agent.write_text(BOOM)
    res = cli("run", str(EXAMPLES), "--agent", f"{agent}:Boom", "--run", "boom", "--task", "plain-bugfix",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 1  # a trial ended infra_error: the run is not whole
    assert "1 trial(s) ended infra_error" in res.stderr and "rerun boom --where infra_error" in res.stderr
    res = cli("trials", "boom")
    assert res.exit_code == 0 and "cause" in res.stdout and "'missing_field'" in res.stdout
    (line,) = json.loads(cli("trials", "boom", "--json").stdout)["trials"]
    assert line["exception"] == "KeyError" and "missing_field" in line["cause"]
    res = cli("log", str(line["id"]))
    assert res.exit_code == 0
    assert "cause: KeyError: unexpected: 'missing_field'" in res.stdout
    assert 'return settings["missing_field"]' in res.stdout and "Traceback (most recent call last)" in res.stdout
    assert "no stored" not in res.stdout
    kept = tmp_path / "runs" / "boom" / line["trial_name"] / "agent" / "traceback.txt"
    assert "KeyError: 'missing_field'" in kept.read_text()


class FailingModel(LocalServer):
    """Lists its model and answers the start-up's one-token check, then 500 on every trial's call."""

    def __init__(self) -> None:
        self.failed = 0

        def respond(method: str, path: str, body: bytes) -> tuple[int, bytes]:
            if method == "GET" and path == "/v1/models":
                return 200, json.dumps({"data": [{"id": "m", "owned_by": "tests"}]}).encode()
            if json.loads(body).get("max_tokens") == 1:
                return 200, json.dumps({"choices": [{"message": {"content": "OK"}, "finish_reason": "stop"}]}).encode()
            self.failed += 1
            return 500, json.dumps({"error": {"message": "CUDA out of memory"}}).encode()

        super().__init__(respond)


def test_a_server_failing_every_call_trips_the_breaker(engine, cli, db: str, tmp_path: Path) -> None:
    server = FailingModel()
    try:
        res = cli("run", str(EXAMPLES), "--agent", "mini", "--endpoint", server.url, "--run", "br", "--retries", "0",
                  "--stop-after-errors", "2", "--warm-pool", "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    finally:
        server.close()
    assert res.exit_code == 1
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("error: stopped: 2 trials in a row ended EndpointError (model endpoint")
    assert "answered 500" in line and "2 of 6 trials recorded; `trialbook resume br` runs the other 4" in line
    assert server.failed <= 3  # the two, and the one trial in flight then: not one call per remaining trial
    run = Ledger(db).get_run("br")
    assert len(list(Ledger(db).trial_rows(run.id))) == 2
    assert engine.containers.list(all=True, filters={"label": "trialbook.run=br"}) == []


def _start(tmp_path: Path, db: str, run: str, command: str, *extra: str) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / f"{run}.log"
    tasks = "plain-bugfix,slow-solution"
    argv = [*MAIN, "run", str(EXAMPLES), "--agent-cmd", command, "--run", run, "--concurrency", "1",
            "--task", tasks, "--runs-dir", str(tmp_path / "runs"), "--db", db, *extra]  # fmt: skip
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"})
    return proc, log


def test_a_run_writing_to_a_file_writes_progress_lines_before_it_ends(engine, db: str, tmp_path: Path) -> None:
    proc, log = _start(tmp_path, db, "logged", "sleep 4", "--progress-every", "1")
    assert proc.wait(300) == 0, log.read_text()
    lines = log.read_text().splitlines()
    progress = [line for line in lines if line.startswith("progress logged: ")]
    assert any(line.startswith("progress logged: 0/2 trials") for line in progress), lines
    assert all("elapsed " in line and "remaining ~" in line for line in progress)
    assert lines.index(progress[0]) < next(i for i, line in enumerate(lines) if line.startswith("run 'logged'"))


def test_sigint_says_what_is_recorded_and_how_to_resume(engine, db: str, tmp_path: Path) -> None:
    proc, log = _start(tmp_path, db, "sig", "sleep 60")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not engine.containers.list(filters={"label": "trialbook.run=sig"}):
        time.sleep(0.5)
    time.sleep(2)  # the agent's command is running
    proc.send_signal(signal.SIGINT)
    code = proc.wait(120)
    text = log.read_text()
    assert code != 0
    assert "interrupted: 0 of 2 trials recorded; `trialbook resume sig` runs the other 2" in text
    assert "Traceback" not in text

"""Every bad input the hardening pass found gives one line on stderr, the right exit code, no
traceback and no secret (errors.py: 2 bad input, 1 runtime)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trialbook.tasks import load_task

CLI = [sys.executable, "-c", "from trialbook.cli import main; main()"]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"


def tb(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout)


def one_line(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    err = proc.stderr
    assert proc.returncode == code, (proc.returncode, err)
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def test_harbor_exception_info_not_an_object(tmp_path):
    trial = tmp_path / "job" / "t1__abc"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text(
        json.dumps({"task_name": "t1", "trial_name": "t1__abc", "exception_info": "boom"})
    )
    one_line(tb("import", "harbor", str(tmp_path / "job"), "--db", str(tmp_path / "l.db")), 2, "exception_info")


def test_harbor_infinite_reward_refused(tmp_path):
    trial = tmp_path / "job" / "t1__abc"
    trial.mkdir(parents=True)
    (trial / "result.json").write_text('{"task_name": "t1", "verifier_result": {"rewards": {"reward": 1e999}}}')
    one_line(tb("import", "harbor", str(tmp_path / "job"), "--db", str(tmp_path / "l.db")), 2, "not a finite number")


def test_jsonl_infinite_reward_refused(tmp_path):
    (tmp_path / "t.jsonl").write_text('{"task_id": "t", "attempt": 0, "outcome": "resolved", "reward": 1e999}\n')
    one_line(tb("import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "r", "--db", str(tmp_path / "l.db")), 2)
    runs = tb("runs", "--json", "--db", str(tmp_path / "l.db"))
    assert "Infinity" not in runs.stdout


@pytest.mark.parametrize(
    ("url", "needle"),
    [("mysql://x/y", "unsupported database 'mysql://'"), ("postgresql://[::1", "invalid ledger URL")],
)
def test_bad_db_urls(url, needle):
    one_line(tb("runs", "--db", url), 2, needle)


def test_password_masked_when_the_server_is_unreachable():
    err = one_line(tb("runs", "--db", "postgresql://u:s3cr@t-pw@127.0.0.1:9/db"), 2, "***")
    assert "s3cr" not in err and "t-pw" not in err


def test_garbage_in_the_ledger_file(tmp_path):
    db = tmp_path / "l.db"
    lines = "".join(
        json.dumps(
            {"task_id": f"t{i}", "attempt": 0, "outcome": "resolved", "reward": 1.0, "exception_message": "x" * 200}
        )
        + "\n"
        for i in range(300)
    )
    (tmp_path / "t.jsonl").write_text(lines)
    assert tb("import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "r", "--db", str(db)).returncode == 0
    with db.open("r+b") as fh:
        fh.seek(12 * 1024)
        fh.write(b"\xde\xad" * 2000)
    for args in (["runs"], ["show", "r"], ["import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "r2"]):
        proc = tb(*args, "--db", str(db))
        assert proc.returncode != 0 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "malformed" in proc.stderr or "not a database" in proc.stderr, proc.stderr


def test_import_steps_step_past_int64(tmp_path):
    db = str(tmp_path / "l.db")
    (tmp_path / "tr.jsonl").write_text(
        '{"task_id": "t", "attempt": 0, "outcome": "resolved", "reward": 1.0, "step": 1, "wv": 1}\n'
    )
    assert (
        tb("import", "jsonl", str(tmp_path / "tr.jsonl"), "--run", "tr", "--kind", "train", "--db", db).returncode == 0
    )
    (tmp_path / "steps.jsonl").write_text(json.dumps({"step": 2**63, "loss": 1.0}) + "\n")
    one_line(tb("import", "steps", str(tmp_path / "steps.jsonl"), "--run", "tr", "--db", db), 2, "below 2^63")


@pytest.mark.parametrize(("field", "value"), [("cpus", "inf"), ("cpus", "nan"), ("memory_mb", "99999999999999")])
def test_non_finite_task_limits_refused(tmp_path, field, value):
    task = tmp_path / "t"
    shutil.copytree(EXAMPLE, task)
    toml = (task / "task.toml").read_text()
    toml = "\n".join(line for line in toml.splitlines() if not line.startswith(f"{field} ="))
    (task / "task.toml").write_text(toml + f"\n{field} = {value}\n")
    with pytest.raises(ValueError, match=f"invalid task.toml: environment.{field}"):
        load_task(task)


@pytest.mark.postgres
def test_concurrent_imports_into_one_run(tmp_path, pg):
    lines = "".join(
        json.dumps({"task_id": f"t{i}", "attempt": 0, "outcome": "resolved", "reward": 1.0}) + "\n"
        for i in range(20000)
    )
    (tmp_path / "t.jsonl").write_text(lines)
    procs = [
        subprocess.Popen([*CLI, "import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "same", "--db", pg],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]  # fmt: skip
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    assert sorted(code for code, _ in results) == [0, 2, 2], results
    for code, err in results:
        if code:
            assert err.count("\n") == 1 and "Traceback" not in err and "INSERT" not in err, err
            assert "same" in err


def test_json_output_is_strict_even_with_an_infinite_reward_stored(tmp_path):
    import sqlite3

    db = tmp_path / "l.db"
    (tmp_path / "t.jsonl").write_text('{"task_id": "t", "attempt": 0, "outcome": "unresolved", "reward": 0.5}\n')
    assert tb("import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "r", "--db", str(db)).returncode == 0
    with sqlite3.connect(db) as conn:  # a ledger written before non-finite rewards were refused
        conn.execute("UPDATE trials SET reward = 1e999")
    for args in (["runs", "--json"], ["show", "r", "--json"]):
        proc = tb(*args, "--db", str(db))
        assert proc.returncode == 0, proc.stderr
        json.loads(proc.stdout)  # strict: Python's json accepts Infinity, so check the text too
        assert "Infinity" not in proc.stdout and "NaN" not in proc.stdout


@pytest.mark.postgres
def test_password_masked_when_the_server_refuses_it(pg):
    wrong = pg.replace("://trialbook:trialbook@", "://trialbook:not-the-pw-42@")
    assert wrong != pg
    err = one_line(tb("runs", "--db", wrong), 2, "***", "password authentication failed")
    assert "not-the-pw-42" not in err

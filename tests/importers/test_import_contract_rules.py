"""Issue 15: one import contract for every format (reward range, agreeing result fields, one timestamp
rule, errors naming file and line, --logs of another system refused)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from paths import HARBOR_JOBS, INSTANCES, RESULTS, SWE


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def imp(cli, tmp_path: Path, rows: list[dict], *extra: str):
    return cli("import", "jsonl", str(write(tmp_path / "t.jsonl", rows)), "--run", "r", *extra)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"task_id": "a", "reward": 1.5}, "reward 1.5 is outside [0, 1]"),
        ({"task_id": "a", "reward": -0.1}, "reward -0.1 is outside [0, 1]"),
        ({"task_id": "a", "resolved": False, "reward": 1}, "'resolved' false contradicts 'reward' 1"),
        ({"task_id": "a", "resolved": True, "reward": 0.5}, "'resolved' true contradicts 'reward' 0.5"),
        ({"task_id": "a", "resolved": True, "outcome": "unresolved"}, "'outcome' unresolved contradicts 'resolved'"),
        ({"task_id": "a", "resolved": False, "outcome": "resolved"}, "'outcome' resolved contradicts 'resolved'"),
        ({"task_id": "a", "outcome": "unresolved", "reward": 1.0}, "'outcome' unresolved contradicts 'reward' 1"),
        ({"task_id": "a", "outcome": "resolved", "reward": 0}, "'outcome' resolved contradicts 'reward' 0"),
        ({"task_id": "a", "outcome": "infra_error", "resolved": True}, "'outcome' infra_error (ungraded) contradicts"),
        ({"task_id": "a", "resolved": True, "started_at": "yesterday"}, "started_at must be ISO-8601 text or Unix"),
    ],
)  # fmt: skip
def test_contradictions_refused_naming_file_line_and_both_fields(cli, tmp_path, bad, message):
    r = imp(cli, tmp_path, [{"task_id": "ok", "resolved": True}, bad])
    assert r.exit_code == 2, r.stdout
    assert f"{tmp_path / 't.jsonl'}: line 2: " in r.stderr and message in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1
    assert json.loads(cli("runs", "--json").stdout) == []  # nothing written


def test_agreeing_fields_and_partial_rewards_are_accepted(cli, tmp_path):
    rows = [
        {"task_id": "a", "resolved": False, "reward": 0.5},
        {"task_id": "b", "outcome": "unresolved", "reward": 0.25},
        {"task_id": "c", "outcome": "agent_timeout", "resolved": True},
        {"task_id": "d", "resolved": True, "reward": 1.0, "outcome": "resolved"},
    ]
    assert imp(cli, tmp_path, rows).exit_code == 0
    show = json.loads(cli("show", "r", "--json").stdout)
    assert show["resolved"] == 2 and show["mean_reward"] == pytest.approx((0.5 + 0.25 + 1 + 1) / 4)


def test_declared_reward_range(cli, tmp_path):
    rows = [{"task_id": "a", "reward": 7.5}, {"task_id": "b", "reward": 0}, {"task_id": "c", "reward": 10},
            {"task_id": "d", "reward": 1, "resolved": False}]  # fmt: skip
    assert imp(cli, tmp_path, rows).exit_code == 2
    assert imp(cli, tmp_path, rows, "--reward-range", "0,10").exit_code == 0
    show = json.loads(cli("show", "r", "--json").stdout)
    # stored as the fraction of the range: full marks (10) is the one resolved, 1 of 10 is not
    assert show["mean_reward"] == pytest.approx((0.75 + 0 + 1 + 0.1) / 4) and show["resolved"] == 1
    out = tmp_path / "out.jsonl"
    assert cli("export", "r", "--jsonl", str(out)).exit_code == 0
    assert [json.loads(x)["reward"] for x in out.read_text().splitlines()] == [0.75, 0.0, 1.0, 0.1]
    r = imp(cli, tmp_path, [{"task_id": "a", "reward": 1, "resolved": True}], "--reward-range", "0,10", "--replace")
    assert r.exit_code == 2 and "line 1: 'resolved' true contradicts 'reward' 1" in r.stderr  # 1 of 10 is partial
    assert imp(cli, tmp_path, [{"task_id": "a", "reward": -1, "resolved": False}], "--reward-range", "-1,1",
               "--replace").exit_code == 0  # fmt: skip
    assert json.loads(cli("show", "r", "--json").stdout)["mean_reward"] == 0.0
    assert imp(cli, tmp_path, rows, "--reward-range", "5,1", "--replace").exit_code == 2


def test_one_timestamp_rule_for_trials_and_steps(cli, tmp_path):
    rows = [{"task_id": "a", "resolved": True, "step": 0, "wv": 0, "started_at": "2026-01-01T10:00:00",
             "finished_at": 1767261600}]  # fmt: skip
    assert imp(cli, tmp_path, rows, "--kind", "train").exit_code == 0
    out = tmp_path / "out.jsonl"
    assert cli("export", "r", "--jsonl", str(out)).exit_code == 0
    t = json.loads(out.read_text().splitlines()[0])
    assert t["started_at"] == "2026-01-01T10:00:00.000+00:00"  # no zone means UTC
    assert t["finished_at"] == "2026-01-01T10:00:00.000+00:00"  # Unix seconds
    steps = write(tmp_path / "s.jsonl", [{"step": 0, "started_at": "yesterday"}])
    r = cli("import", "steps", str(steps), "--run", "r")
    assert r.exit_code == 2 and f"{steps}: line 1: started_at must be ISO-8601 text or Unix seconds" in r.stderr


def test_harbor_reward_out_of_range_names_the_file(cli, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(HARBOR_JOBS / "sonnet46-stacked-v2", job)
    result = next(job.glob("full-stack__*/result.json"))
    data = json.loads(result.read_text())
    data["verifier_result"]["rewards"] = {"composite_score": 1.5}
    result.write_text(json.dumps(data))
    r = cli("import", "harbor", str(job))
    assert r.exit_code == 2 and f"{result}: reward 1.5 is outside [0, 1]" in r.stderr
    assert cli("import", "harbor", str(job), "--reward-range", "0,2").exit_code == 0
    out = tmp_path / "out.jsonl"
    assert cli("export", "job", "--jsonl", str(out)).exit_code == 0
    rewards = {t["task_id"]: t["reward"] for t in map(json.loads, out.read_text().splitlines())}
    assert rewards == {"full-stack": 0.75, "tier0-smoke-test": pytest.approx(0.9667 / 2)}  # fractions of [0, 2]


def test_harbor_times_follow_the_one_timestamp_rule(cli, tmp_path):
    job = tmp_path / "job"
    shutil.copytree(HARBOR_JOBS / "sonnet46-stacked-v2", job)
    result = next(job.glob("full-stack__*/result.json"))
    data = json.loads(result.read_text())
    finished = data["finished_at"]  # 2026-02-23T04:22:11.254044Z
    data["started_at"] = 1771818851  # Unix seconds: 2026-02-23T03:54:11Z, 1680.254 s before `finished`
    result.write_text(json.dumps(data))
    assert cli("import", "harbor", str(job), "--run", "unix").exit_code == 0
    out = tmp_path / "out.jsonl"
    assert cli("export", "unix", "--jsonl", str(out)).exit_code == 0
    (trial,) = [t for t in map(json.loads, out.read_text().splitlines()) if t["task_id"] == "full-stack"]
    assert trial["started_at"] == "2026-02-23T03:54:11.000+00:00" and finished.startswith("2026-02-23T04:22:11")
    assert trial["duration_s"] == pytest.approx(1680.254)
    for field, value in (("started_at", "yesterday"), ("agent_setup", {"started_at": "x", "finished_at": "y"})):
        data[field] = value
        result.write_text(json.dumps(data))
        r = cli("import", "harbor", str(job), "--run", "bad")
        assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"{result}: " in r.stderr and "must be ISO-8601 text or Unix seconds" in r.stderr
        data["started_at"] = 1771818851


LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"


def test_logs_of_another_system_refused_unless_forced(cli):
    other = RESULTS / "20240402_sweagent_gpt4.json"
    r = cli("import", "swebench", str(other), "--instances", str(INSTANCES), "--logs", str(LOGS))
    assert r.exit_code == 2 and "disagree with" in r.stderr and "on 8 of 47 instances" in r.stderr
    assert "--force" in r.stderr
    forced = cli("import", "swebench", str(other), "--instances", str(INSTANCES), "--logs", str(LOGS), "--force")
    assert forced.exit_code == 0
    assert "warning: --logs" in forced.stderr and "on 8 of 47 instances" in forced.stderr  # forced, still counted
    assert "attached anyway" in forced.stderr
    own = RESULTS / "20240620_sweagent_claude3.5sonnet.json"
    mine = cli("import", "swebench", str(own), "--instances", str(INSTANCES), "--logs", str(LOGS))
    assert mine.exit_code == 0 and "warning" not in mine.stderr


def test_export_of_a_training_run_keeps_its_steps(cli, tmp_path):
    rows = [{"task_id": f"t{i}", "resolved": i % 2 == 0, "step": i // 2, "wv": i // 2} for i in range(6)]
    assert imp(cli, tmp_path, rows, "--kind", "train").exit_code == 0
    steps = [{"step": s, "started_at": f"2026-01-01T1{s}:00:00Z", "finished_at": f"2026-01-01T1{s}:30:00Z",
              "kl": 0.1 * s} for s in range(3)]  # fmt: skip
    steps = write(tmp_path / "s.jsonl", steps)
    assert cli("import", "steps", str(steps), "--run", "r").exit_code == 0
    out = tmp_path / "out.jsonl"
    assert cli("export", "r", "--jsonl", str(out)).exit_code == 0
    assert cli("import", "jsonl", str(out), "--run", "back", "--kind", "train").exit_code == 0
    from trialbook.ledger import queries
    from trialbook.ledger.store import Ledger

    ledger = Ledger(str(tmp_path / "ledger.db"))
    before = queries.step_rows(ledger, ledger.get_run("r").id)
    after = queries.step_rows(ledger, ledger.get_run("back").id)
    assert len(after) == 3 and after == before
    a = json.loads(cli("train", "report", "r", "--json").stdout)
    b = json.loads(cli("train", "report", "back", "--json").stdout)
    assert a.get("stalls") == b.get("stalls")

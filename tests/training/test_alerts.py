"""Every row of the alert table (`training.alerts.ALERTS`) fires on a run planted to trip it, and stays quiet
on the same run without the plant; each event is raised once however often the run is read; the table prints."""

from __future__ import annotations

import json
from pathlib import Path

import orjson

from steplog import timed_steps
from trialbook.importers.jsonl import import_jsonl
from trialbook.ledger.store import Ledger
from trialbook.training import alerts
from trialbook.training.ingest import import_steps
from trialbook.training.watch import Watcher

TASKS = [f"django__django-{100 + i}" for i in range(8)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return path


def _run(tmp: Path, waits: list[float], plant: bool) -> Ledger:
    """8 tasks x 4 rollouts per step; with `plant`: stale trajectories, infra errors, a stuck task and a
    verifier artifact (test_infra_changed) that appears only in the later weight versions."""
    rows = []
    for step in range(1, len(waits) + 1):
        for task in TASKS:
            for r in range(4):
                row = {"task_id": task, "step": step, "wv": step - 1, "epoch": 0, "outcome": "resolved",
                       "duration_s": 300.0}  # fmt: skip
                if plant:
                    if task == TASKS[0]:
                        row["outcome"] = "agent_timeout"
                    if task == TASKS[1] and r < 2:
                        row["outcome"] = "infra_error"
                    if task == TASKS[2] and r == 0 and step <= 5:
                        row["wv"] = 0  # step - 1 versions behind
                    if step > 5 and task in TASKS[3:6] and r < 2:
                        row["tags"] = ["test_infra_changed"]
                rows.append(row)
    ledger = Ledger(str(tmp / "l.db"))
    import_jsonl(ledger, _write(tmp / "t.jsonl", rows), "r", kind="train")
    steps = [{**s, "started_at": s["started_at"].isoformat(), "finished_at": s["finished_at"].isoformat()}
             for s in timed_steps(waits)]  # fmt: skip
    import_steps(ledger, _write(tmp / "s.jsonl", steps), "r")
    return ledger


def test_every_rule_fires_on_its_plant_and_only_once(tmp_path: Path) -> None:
    waits = [600, 610, 590, 600, 605, 4000, 600, 600, 600, 600]  # step 6: slow, not at a boundary (one pass)
    w = Watcher(_run(tmp_path, waits, plant=True), "r", bucket=5, max_staleness=2)
    first = w.refresh()
    by_rule = {a.rule: a for a in first}
    assert set(by_rule) == set(alerts.BY_NAME) - {"epoch_boundary_drain"}  # the drain has its own test (test_watch)
    assert by_rule["slow_step"].details["stalled_step"] == 6 and by_rule["slow_step"].details["in_progress"] is False
    assert by_rule["staleness_over_bound"].details["over"] == {3: 1, 4: 1}  # steps 4 and 5 of the planted task
    assert by_rule["infra_error_rate"].details["pct"] == round(100 * 20 / 320, 2)  # 2 rollouts x 10 steps of 320
    assert by_rule["task_never_finishes"].details["task_id"] == TASKS[0]
    sig = by_rule["signature_rising"].details
    assert sig["signature"] == "test_infra_changed" and sig["shares_pct"] == [0.0, 100 * 30 / 160]
    assert w.refresh() == []  # the same events: not raised again


def test_quiet_run_raises_nothing(tmp_path: Path) -> None:
    w = Watcher(_run(tmp_path, [600, 610, 590, 600, 605, 620, 600], plant=False), "r", max_staleness=3)
    assert w.refresh() == []
    assert w.state is not None and w.state.staleness == {"0": 7 * 32} and w.state.in_flight_wv == {}


def test_alert_table_prints_every_rule(cli) -> None:
    res = cli("train", "alerts", "--json", use_db=False)
    assert res.exit_code == 0
    rows = json.loads(res.stdout)
    assert [r["alert"] for r in rows] == [r.name for r in alerts.ALERTS]
    assert all(r["meaning"] and r["threshold"] for r in rows)
    human = cli("train", "alerts", use_db=False).stdout
    assert all(r.name in human for r in alerts.ALERTS)

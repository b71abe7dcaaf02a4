"""`trialbook ledger check` (ledger/integrity.py) on SQLite and on the real PostgreSQL server: a whole ledger is OK
(exit 0), and each damage a fault could leave is one line naming it (exit 1)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from trialbook.ledger.integrity import check
from trialbook.ledger.store import Ledger, trial_row
from trialbook.outcomes import Outcome
from trialbook.records import Run, Trial

HARNESS = {"agent": "oracle", "tasks_dir": "/tasks"}


def build(url: str) -> Ledger:
    """Two runs: one `trialbook run` made (three tasks, one trial superseded by its rerun), one imported."""
    ledger = Ledger(url)
    with ledger.transaction() as conn:
        made = ledger.create_run(conn, Run(name="made", kind="eval", config=HARNESS))
        other = ledger.create_run(conn, Run(name="imported", kind="eval"))
        for task in ("a", "b", "c"):
            t = Trial(task_id=task, outcome=Outcome.RESOLVED, reward=1.0, finished_at="2026-12-07T09:00:00+00:00",
                      extra={"trial_name": f"{task}-0"})  # fmt: skip
            first = ledger.record_trial(conn, trial_row(made, t))
            ledger.insert_artifacts(conn, [(first, "agent.log", "ran")])
        ledger.record_trial(conn, trial_row(made, t), supersedes=first)
        ledger.record_trial(conn, trial_row(other, Trial(task_id="a", outcome=Outcome.UNRESOLVED, reward=0.0)))
    return ledger


def damage(ledger: Ledger) -> list[str]:
    """Each fault's leftover, and the words of the line that must name it."""
    with ledger.engine.connect() as conn:  # an artifact whose trial is gone: the foreign key off to plant it
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("PRAGMA foreign_keys = OFF")
        else:
            conn.execute(text("ALTER TABLE artifacts DROP CONSTRAINT IF EXISTS artifacts_trial_id_fkey"))
        conn.execute(text("INSERT INTO artifacts (trial_id, name, content) VALUES (77777, 'agent.log', 'x')"))
        conn.commit()
    with ledger.engine.begin() as conn:
        made = conn.execute(text("SELECT id FROM runs WHERE name = 'made'")).scalar_one()
        ids = [r[0] for r in conn.execute(text("SELECT id FROM trials WHERE run_id = :r ORDER BY id"), {"r": made})]
        row = conn.execute(text("SELECT task_id, attempt FROM trials WHERE id = :i"), {"i": ids[0]}).one()
        conn.execute(  # a second current row of (made, a, 0): a trial recorded twice
            text("INSERT INTO trials (run_id, task_id, attempt, outcome, finished_at, extra) "
                 "VALUES (:r, :t, :a, 'resolved', 'x', :e)"),
            {"r": made, "t": row.task_id, "a": row.attempt, "e": json.dumps({"trial_name": "dup"})},
        )  # fmt: skip
        conn.execute(text("UPDATE trials SET finished_at = NULL WHERE id = :i"), {"i": ids[1]})  # half-written
        conn.execute(text("UPDATE trials SET extra = '{\"trial_name\": ' WHERE id = :i"), {"i": ids[2]})  # cut JSON
        conn.execute(text("UPDATE trials SET superseded_by = 99999 WHERE id = :i"), {"i": ids[3]})
        conn.execute(text("UPDATE runs SET stack = 'nope' WHERE id = :r"), {"r": made})
        conn.execute(text("UPDATE trials SET outcome = 'exploded' WHERE run_id <> :r"), {"r": made})
    return [
        "task a attempt 0 recorded 2 times as current",
        f"trial {ids[1]}: half-written (no finish time)",
        f"trial {ids[2]}: extra: not JSON",
        f"trial {ids[3]}: superseded by trial 99999, which does not exist",
        "run made: stack: not JSON",
        "unknown outcome 'exploded'",
        "artifact agent.log of trial 77777: the trial is missing",
    ]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_whole_ledger_passes_and_each_damage_is_one_line(backend: str, cli, db: str, request) -> None:
    url = db if backend == "sqlite" else request.getfixturevalue("pg")
    ledger = build(url)
    res = cli("ledger", "check", "--db", url, use_db=False)
    assert res.exit_code == 0 and "ledger OK: 2 run(s), 5 trial(s) checked" in res.stderr, res.stderr
    expected = damage(ledger)
    res = cli("ledger", "check", "--db", url, use_db=False)
    assert res.exit_code == 1
    lines = res.stdout.splitlines()
    for words in expected:
        assert sum(words in line for line in lines) == 1, (words, lines)
    assert res.stderr.strip().startswith("error: ledger check:") and "Traceback" not in res.stderr
    found = check(ledger)
    assert not found.ok and len(found.problems) == len(lines)

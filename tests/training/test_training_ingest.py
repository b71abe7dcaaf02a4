"""Training ingest: `import jsonl --kind train` checks and `import steps` (real SQLite ledger, real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import func, select

from trialbook.ledger.schema import runs, steps, trials
from trialbook.ledger.store import Ledger


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _counts(db: str) -> tuple[int, int, int]:
    with Ledger(db).engine.connect() as conn:
        return tuple(conn.execute(select(func.count()).select_from(t)).scalar_one() for t in (runs, trials, steps))


TRAJ = [
    {"task_id": "django__django-1", "step": 1, "wv": 0, "epoch": 0, "outcome": "resolved"},
    {"task_id": "django__django-1", "step": 1, "wv": 0, "epoch": 0, "reward": 0.0},
    {"task_id": "sympy__sympy-2", "step": 2, "wv": 1, "epoch": 0},  # cut off: no result
]


def test_train_import_records_outcome_less_lines_as_incomplete(cli, db, tmp_path):
    res = cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", TRAJ)), "--run", "rl", "--kind", "train")
    assert res.exit_code == 0, res.stderr
    show = json.loads(cli("show", "rl", "--json").stdout)
    assert show["kind"] == "train"
    assert show["outcomes"] == {"resolved": 1, "unresolved": 1, "incomplete": 1}
    assert show["judged"] == 2 and show["trials"] == 3


def test_eval_import_still_refuses_outcome_less_lines(cli, db, tmp_path):
    res = cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", TRAJ)), "--run", "ev")
    assert res.exit_code == 2 and "line 3" in res.stderr
    assert _counts(db) == (0, 0, 0)


def test_train_import_refuses_missing_step_or_wv_naming_the_line(cli, db, tmp_path):
    rows = [*TRAJ[:2], {"task_id": "x__y-1", "step": 3, "outcome": "resolved"}]
    res = cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", rows)), "--run", "rl", "--kind", "train")
    assert res.exit_code == 2
    assert "line 3" in res.stderr and "'wv'" in res.stderr and res.stderr.count("\n") == 1
    assert _counts(db) == (0, 0, 0)
    rows[2] = {"task_id": "x__y-1", "outcome": "resolved"}
    res = cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", rows)), "--run", "rl", "--kind", "train")
    assert res.exit_code == 2 and "'step' and 'wv' missing" in res.stderr


STEPS = [
    {"step": 1, "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T00:10:00Z", "raw_reward": 0.44},
    {"step": 2, "started_at": 1767226200, "finished_at": 1767226800.5, "entropy": 0.4, "grad_norm": 0.09},
    {"step": 3, "finished_at": "2026-01-01T01:30:00", "kl": 0.002, "note": None},
]


def _train_run(cli, tmp_path):
    assert (
        cli("import", "jsonl", str(_write(tmp_path / "t.jsonl", TRAJ)), "--run", "rl", "--kind", "train").exit_code == 0
    )


def test_import_steps_stores_times_and_metrics(cli, db, tmp_path):
    _train_run(cli, tmp_path)
    res = cli("import", "steps", str(_write(tmp_path / "s.jsonl", STEPS)), "--run", "rl")
    assert res.exit_code == 0, res.stderr
    assert "imported 3 steps" in res.stderr
    with Ledger(db).engine.connect() as conn:
        rows = conn.execute(select(steps).order_by(steps.c.step)).mappings().all()
    assert [r["step"] for r in rows] == [1, 2, 3]
    assert rows[0]["finished_at"] == "2026-01-01T00:10:00.000+00:00"
    assert rows[1]["started_at"] == "2026-01-01T00:10:00.000+00:00"  # Unix seconds -> UTC ISO
    assert rows[1]["finished_at"] == "2026-01-01T00:20:00.500+00:00"
    assert rows[2]["started_at"] is None and rows[2]["finished_at"] == "2026-01-01T01:30:00.000+00:00"
    assert json.loads(rows[0]["metrics"]) == {"raw_reward": 0.44}
    assert json.loads(rows[1]["metrics"]) == {"entropy": 0.4, "grad_norm": 0.09}
    assert json.loads(rows[2]["metrics"]) == {"kl": 0.002}
    # a second import needs --replace, and --replace swaps the steps wholesale
    again = cli("import", "steps", str(_write(tmp_path / "s2.jsonl", STEPS[:1])), "--run", "rl")
    assert again.exit_code == 2 and "--replace" in again.stderr
    assert cli("import", "steps", str(tmp_path / "s2.jsonl"), "--run", "rl", "--replace").exit_code == 0
    assert _counts(db)[2] == 1


def test_import_steps_bad_input_leaves_ledger_untouched(cli, db, tmp_path):
    _train_run(cli, tmp_path)
    before = _counts(db)
    cases = {
        "unknown run": (STEPS, "nope", "no run named 'nope'"),
        "out of order": ([STEPS[1], STEPS[0]], "rl", "line 2: step 1 is out of order"),
        "duplicated": ([STEPS[0], STEPS[1], STEPS[1]], "rl", "line 3: step 2 is duplicated"),
        "text metric": ([{"step": 1, "entropy": "high"}], "rl", "line 1: metric 'entropy' must be a number"),
        "bad time": ([{"step": 1, "finished_at": "yesterday"}], "rl", "line 1: finished_at must be ISO-8601"),
        "negative": ([{"step": -1}], "rl", "line 1: 'step' must be a non-negative integer"),
    }
    for name, (rows, run, message) in cases.items():
        res = cli("import", "steps", str(_write(tmp_path / "bad.jsonl", rows)), "--run", run)
        assert res.exit_code == 2, name
        assert message in res.stderr, (name, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
        assert _counts(db) == before, name
    res = cli("import", "steps", str(tmp_path / "missing.jsonl"), "--run", "rl")
    assert res.exit_code == 2 and "no such file" in res.stderr

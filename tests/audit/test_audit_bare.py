"""`audit` counts bare trials (no logs, no test statuses, no extra) by group in SQL (issue 16): the
result must be exactly what reading them one by one gives."""

from __future__ import annotations

import json
from pathlib import Path

from trialbook.audit.failures import audit_run
from trialbook.ledger.store import Ledger

P2P = {"FAIL_TO_PASS": {"t1": "pass"}, "PASS_TO_PASS": {"t2": "fail", "t3": "pass"}}
ROWS = [
    {"task_id": "o__a-1", "outcome": "verifier_timeout"},
    {"task_id": "o__b-1", "outcome": "resolved", "reward": 1.0},
    {"task_id": "o__c-1", "outcome": "unresolved", "reward": 0.0},
    {"task_id": "o__d-1", "outcome": "unresolved", "reward": 0.0, "tags": ["test_infra_changed"]},
    {"task_id": "o__e-1", "outcome": "unresolved", "reward": 0.0, "tests": P2P},
    {"task_id": "o__a-1", "outcome": "verifier_timeout"},
    {"task_id": "p__f-1", "outcome": "verifier_timeout", "exception": "VerifierTimeoutError"},
    {"task_id": "p__g-1", "outcome": "agent_timeout"},
]


def _import(cli, tmp_path: Path, name: str, rows: list[dict]) -> None:
    src = tmp_path / f"{name}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = cli("import", "jsonl", str(src), "--run", name)
    assert res.exit_code == 0, res.stderr


def test_bare_trials_counted_in_sql_match_one_by_one(cli, db: str, tmp_path: Path) -> None:
    _import(cli, tmp_path, "mixed", ROWS)
    _import(cli, tmp_path, "rich", [{**r, "note": 1} for r in ROWS])  # an extra key: no trial is bare
    ledger = Ledger(db)
    fast, slow = audit_run(ledger, "mixed", jobs=1).to_json(), audit_run(ledger, "rich", jobs=1).to_json()
    assert {**fast, "run": "rich"} == slow

    assert (fast["trials"], fast["graded"], fast["with_log"]) == (8, 5, 0)  # agent_timeout is graded (a failure)
    vt = fast["by_signature"]["verifier_timeout"]
    assert (vt["trials"], vt["unresolved"], vt["resolved"]) == (3, 3, 0)
    assert fast["by_signature"]["test_infra_changed"]["trials"] == 1
    assert fast["p2p_penalties"]["count"] == 1 and fast["p2p_penalties"]["by_repo"] == {"o/e": 1}
    assert [(s["task_id"], s["attempt"], s["signatures"]) for s in fast["signature_trials"]] == [
        ("o__a-1", 0, ["verifier_timeout"]),
        ("o__d-1", 0, ["test_infra_changed"]),
        ("o__a-1", 1, ["verifier_timeout"]),
        ("p__f-1", 0, ["verifier_timeout"]),
    ]
    assert fast["artifact_tasks"] == ["o__a-1", "p__f-1"]
    assert fast["explained_by_artifacts"]["of_unresolved"] == 4
    counts_only = audit_run(ledger, "mixed", jobs=1, per_trial=False).to_json()  # the web page's: no bare trial listed
    assert counts_only == {**fast, "signature_trials": counts_only["signature_trials"],
                           "artifact_tasks": counts_only["artifact_tasks"]}  # fmt: skip
    assert [s["task_id"] for s in counts_only["signature_trials"]] == ["o__d-1"]

"""Trajectories as training data (trialbook/trajectory.py) and their token-exactness audit, on a real SQLite ledger:
the loss mask, the compact artifact, a planted re-tokenized turn named by `train report`, the export."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq

from trialbook.harness.trial.execution import TrialResult
from trialbook.harness.trial.writer import record_trial
from trialbook.ledger.store import Ledger
from trialbook.outcomes import Outcome
from trialbook.records import Run, Trial
from trialbook.trajectory import ARTIFACT, TAG, Trajectory, Turn, tagged

SYSTEM = [1, 2, 3, 4]


def _episode(retokenize_turn: int | None = None) -> list[Turn]:
    """Three turns: each prompt is the previous prompt + completion + an observation; optionally one turn whose
    history holds the previous completion re-tokenized (the same text, other ids: [21, 22] -> [2122])."""
    turns = [Turn(SYSTEM, [21, 22, 9], [-0.1, -0.2, -0.3], 0, 0)]
    for k, obs in enumerate(([30, 31], [40]), start=1):
        prev = turns[-1]
        history = prev.prompt_ids + prev.completion_ids
        if k == retokenize_turn:
            history = [*history[: len(prev.prompt_ids)], 2122, *prev.completion_ids[2:]]
        turns.append(Turn(history + obs, [50 + k, 9], [-0.5, None], k - 1, k))
    return turns


def test_one_sequence_per_consistent_episode_with_policy_tokens_masked_in():
    traj = Trajectory.of(_episode(), model="m", engine="llama-cpp-python")
    assert traj.broken == [] and all(t.extends for t in traj.turns)
    (seg,) = traj.segments()
    assert seg.input_ids == [1, 2, 3, 4, 21, 22, 9, 30, 31, 51, 9, 40, 52, 9]
    assert seg.loss_mask == [0, 0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1, 1]
    assert seg.logprobs[4:7] == [-0.1, -0.2, -0.3] and seg.logprobs[7:9] == [None, None]
    assert (traj.wv_first, traj.wv_last) == (0, 2)
    assert traj.summary(step=3)["staleness"] == 3
    text = traj.dumps()
    back = Trajectory.loads(text)
    assert [(t.prompt_ids, t.completion_ids, t.logprobs, t.wv_start, t.wv_end) for t in back.turns] == [
        (t.prompt_ids, t.completion_ids, t.logprobs, t.wv_start, t.wv_end) for t in traj.turns
    ]
    # compact: each prompt is stored once, as the observation it adds, not re-sent in full every turn
    assert json.loads(text)["turns"][2]["obs"] == [40]


def test_a_retokenized_turn_splits_the_episode_and_keeps_its_full_prompt():
    traj = Trajectory.of(_episode(retokenize_turn=1))
    assert traj.broken == [1]
    segs = traj.segments()
    assert [s.first_turn for s in segs] == [0, 1] and sum(sum(s.loss_mask) for s in segs) == 7
    assert "prompt" in json.loads(traj.dumps())["turns"][1]
    assert Trajectory.loads(traj.dumps()).broken == [1]


def _record(ledger: Ledger, run_id: int, attempt: int, traj: Trajectory, step: int, extra: dict | None = None):
    extra = tagged({"group_id": f"plain-bugfix@{step}", "train_reward": 1.0, **(extra or {})}, traj, step)
    trial = Trial(task_id="plain-bugfix", attempt=attempt, outcome=Outcome.RESOLVED, reward=1.0, step=step,
                  wv=traj.wv_first, epoch=0, extra=extra)  # fmt: skip
    return record_trial(ledger, run_id, TrialResult(trial, f"t{attempt}", extra_files={ARTIFACT: traj.dumps()}))


def test_the_audit_names_the_planted_trial_and_the_export_reads_the_sequences_back(cli, db: str, tmp_path: Path):
    ledger = Ledger(db)
    with ledger.transaction() as conn:
        run_id = ledger.create_run(conn, Run(name="rl", kind="train", config={}))
    good = _record(ledger, run_id, 0, Trajectory.of(_episode()), step=3)
    planted = _record(ledger, run_id, 1, Trajectory.of(_episode(retokenize_turn=2)), step=3)
    masked = {"group_masked": {"group": "plain-bugfix@4", "policy": "mask", "because": ["attempt 3: infra_error"]}}
    _record(ledger, run_id, 2, Trajectory.of(_episode()), step=4, extra=masked)

    out = cli("train", "report", "rl", "--bucket", "1", "--json")
    assert out.exit_code == 0, out.stderr
    audit = json.loads(out.stdout)["tokens"]
    assert audit["with_tokens"] == 3 and audit["turns"] == 9
    assert (audit["prefix_breaks"], audit["broken_trials"]) == (1, 1)
    assert [(b["trial_id"], b["broken_turns"]) for b in audit["broken"]] == [(planted, [2])]
    assert {w["wv"]: w["prefix_breaks"] for w in audit["by_wv"]} == {0: 1}
    assert audit["staleness_max"] == 4 and audit["masked_groups"] == ["plain-bugfix@4"]
    extras = {t.id: t.extra for t in ledger.trial_rows(run_id)}
    assert TAG in extras[planted]["tags"] and TAG not in extras[good]["tags"]

    human = cli("train", "report", "rl", "--bucket", "1")
    assert f"{TAG}: trial {planted} (plain-bugfix #1, step 3, wv 0) turns 2" in human.stdout, human.stdout
    assert "masked groups (1): plain-bugfix@4" in human.stdout

    jsonl = tmp_path / "rl.jsonl"
    res = cli("train", "export-trajectories", "rl", "--out", str(jsonl))
    assert res.exit_code == 0 and "wrote 3 trajectories (4 sequences, 21 policy tokens)" in res.stdout, res.stdout
    rows = [json.loads(x) for x in jsonl.read_text().splitlines()]
    first = rows[0]["sequences"][0]
    assert first["input_ids"] == Trajectory.of(_episode()).segments()[0].input_ids
    assert len(first["loss_mask"]) == len(first["input_ids"]) == len(first["logprobs"])
    assert [r["prefix_breaks"] for r in rows] == [0, 1, 0] and rows[2]["group_masked"] is True
    assert rows[0]["staleness"] == 3 and rows[0]["turns"][2]["wv_end"] == 2

    parquet = tmp_path / "rl.parquet"
    assert cli("train", "export-trajectories", "rl", "--out", str(parquet)).exit_code == 0
    table = pq.read_table(parquet).to_pylist()
    assert [r["trial_id"] for r in table] == [r["trial_id"] for r in rows]
    assert table[1]["sequences"][1]["input_ids"] == rows[1]["sequences"][1]["input_ids"]

    empty = cli("train", "export-trajectories", "nope", "--out", str(jsonl))
    assert empty.exit_code == 2

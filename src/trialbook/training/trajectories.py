"""A training run's token-level trajectories read back: the token-exactness audit of `train report` and
`train export-trajectories` (JSONL, or Parquet when pyarrow is installed).

Both read what each trial recorded (trialbook/trajectory.py): the summary in `extra.rollout` (the audit needs nothing
else) and the `tokens.json` artifact (the export).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TypedDict

from sqlalchemy import or_

from trialbook.errors import UserError
from trialbook.extra_schema import read_extra
from trialbook.ledger.schema import trials
from trialbook.ledger.store import Ledger
from trialbook.training.report_types import BrokenTrial, TokenAudit, WvAudit
from trialbook.trajectory import ARTIFACT, TAG, Trajectory


class TurnRow(TypedDict):
    """Where one turn lies in its trajectory's sequences, and which weights generated it."""

    segment: int
    prompt_len: int
    completion_len: int
    wv_start: int | None
    wv_end: int | None
    extends: bool
    source: str
    finish_reason: str | None


class SequenceRow(TypedDict):
    """One training sequence: input ids, the loss mask (1 on the policy's tokens) and logprobs aligned to them."""

    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float | None]


class TrajectoryRow(TypedDict):
    """One exported row: a trial that recorded tokens (`train export-trajectories`)."""

    run: str
    trial_id: int
    task_id: str
    attempt: int
    group_id: str | None
    step: int | None
    wv: int | None
    epoch: int | None
    wv_first: int | None
    wv_last: int | None
    staleness: int | None
    outcome: str
    verifier_reward: float | None
    reward: float | None
    masked: bool
    group_masked: bool
    exact: bool
    prefix_breaks: int
    model: str | None
    turns: list[TurnRow]
    sequences: list[SequenceRow]


class ExportSummary(TypedDict):
    """What `train export-trajectories` wrote."""

    run: str
    out: str
    format: str
    trajectories: int
    sequences: int
    policy_tokens: int


def token_audit(ledger: Ledger, run_id: int) -> TokenAudit | None:
    """Turns, exactness and broken prefixes of a run's trials, overall and per weight version (the trial's `wv`,
    the oldest version that generated it); None when no trial of the run recorded tokens."""
    per_wv: dict[int | None, dict[str, int]] = {}
    broken: list[BrokenTrial] = []
    staleness: list[int] = []
    masked_groups: set[str] = set()
    with_tokens = turns = breaks = inexact = 0
    # only the trials that can have either (an imported million-trial run is not decoded row by row)
    where = or_(trials.c.extra.like('%"rollout"%'), trials.c.extra.like('%"group_masked"%'))
    for t in ledger.trial_rows(run_id, where=where):
        extra = read_extra(t)
        if mask := extra.group_masked:
            masked_groups.add(mask["group"])
        r = extra.rollout
        if not r:
            continue
        with_tokens += 1
        turns += int(r.get("turns") or 0)
        breaks += int(r.get("prefix_breaks") or 0)
        inexact += not r.get("exact", False)
        if (stale := r.get("staleness")) is not None:
            staleness.append(int(stale))
        row = per_wv.setdefault(t.wv, {"trials": 0, "turns": 0, "prefix_breaks": 0, "broken_trials": 0})
        row["trials"] += 1
        row["turns"] += int(r.get("turns") or 0)
        row["prefix_breaks"] += int(r.get("prefix_breaks") or 0)
        if r.get("prefix_breaks"):
            row["broken_trials"] += 1
            broken.append(BrokenTrial(t.id, t.task_id, t.attempt, t.step, t.wv, list(r.get("broken_turns") or [])))
    if not with_tokens:
        return None
    return TokenAudit(
        with_tokens=with_tokens,
        turns=turns,
        prefix_breaks=breaks,
        broken_trials=len(broken),
        inexact_trials=inexact,
        staleness_max=max(staleness) if staleness else None,
        staleness_mean=round(sum(staleness) / len(staleness), 3) if staleness else None,
        by_wv=[WvAudit(wv, **v) for wv, v in sorted(per_wv.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))],
        broken=broken,
        masked_groups=sorted(masked_groups),
        tag=TAG,
    )


def rows(ledger: Ledger, run: str) -> Iterator[TrajectoryRow]:
    """One JSON-ready row per trial that recorded tokens: the training sequences (input ids, loss mask, logprobs
    aligned to them) and, per turn, where it lies in them and which weights generated it."""
    run_id = ledger.get_run(run).id
    for t in ledger.trial_rows(run_id):
        text = ledger.artifact(t.id, ARTIFACT)
        if text is None:
            continue
        traj = Trajectory.loads(text)
        extra = read_extra(t)
        summary = traj.summary(t.step)
        segments = traj.segments()
        turns: list[TurnRow] = []
        seg = -1
        for k, turn in enumerate(traj.turns):
            if k == 0 or not turn.extends:
                seg += 1
            turns.append(TurnRow(
                segment=seg, prompt_len=len(turn.prompt_ids), completion_len=len(turn.completion_ids),
                wv_start=turn.wv_start, wv_end=turn.wv_end, extends=turn.extends, source=turn.source,
                finish_reason=turn.finish_reason,
            ))  # fmt: skip
        yield {
            "run": run, "trial_id": t.id, "task_id": t.task_id, "attempt": t.attempt,
            "group_id": extra.group_id, "step": t.step, "wv": t.wv, "epoch": t.epoch,
            "wv_first": summary["wv_first"], "wv_last": summary["wv_last"], "staleness": summary["staleness"],
            "outcome": t.outcome, "verifier_reward": t.reward, "reward": extra.train_reward,
            "masked": extra.masked, "group_masked": extra.group_masked is not None,
            "exact": summary["exact"], "prefix_breaks": summary["prefix_breaks"], "model": traj.model,
            "turns": turns,
            "sequences": [SequenceRow(input_ids=s.input_ids, loss_mask=s.loss_mask, logprobs=s.logprobs)
                          for s in segments],
        }  # fmt: skip


def export(ledger: Ledger, run: str, out: Path, fmt: str | None = None) -> ExportSummary:
    """Write the run's trajectories to `out` (JSONL, or Parquet by `fmt` or a `.parquet` suffix)."""
    fmt = fmt or ("parquet" if out.suffix == ".parquet" else "jsonl")
    if fmt not in ("jsonl", "parquet"):
        raise UserError(f"--format must be jsonl or parquet, not '{fmt}'")
    data = list(rows(ledger, run))
    if not data:
        raise UserError(f"run '{run}' has no trials with recorded tokens (run rollouts through the gateway)")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UserError("--format parquet needs pyarrow: pip install pyarrow") from None
        pq.write_table(pa.Table.from_pylist(data), out)
    else:
        with out.open("w") as fh:
            for row in data:
                fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    return {"run": run, "out": str(out), "format": fmt, "trajectories": len(data),
            "sequences": sum(len(r["sequences"]) for r in data),
            "policy_tokens": sum(sum(s["loss_mask"]) for r in data for s in r["sequences"])}  # fmt: skip

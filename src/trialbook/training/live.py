"""A training run as it stands now, for `train watch` and the live training page: read again on every refresh.

- steps' waits with the stall rule applied *as steps arrive*: step i is slow when its wait exceeds
  `stalls.SLOW_FACTOR` x the median wait of the steps before it (at least MIN_HISTORY of them), so a
  verdict never changes when later steps come in; a wait below 0 (the clock of a step went backwards)
  is kept out of the medians and shown as a bad timestamp, never drawn as a negative wait;
- a stall *in progress*: no step for more than SLOW_FACTOR x the median wait while trajectories for
  later steps are arriving; at an epoch boundary when those trajectories belong to a pass no trained
  step has consumed yet (the SkyRL epoch reset: the buffer refills from zero);
- weight versions in flight (trajectories generated for steps not yet trained), the staleness of the
  trained trajectories (step - 1 - wv: how many versions behind the trainer's weights they were),
  outcome shares, and the share of trials each `audit.signatures` row matches per weight-version bucket.

Signature matching reads verifier logs: `SignatureCache` keeps what it matched per trial, so a refresh
reads only the trials added since the last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from trialbook.ledger.queries import OUTCOME_LIST
from trialbook.ledger.store import Ledger
from trialbook.result_types import Result
from trialbook.training.ingest import load_steps
from trialbook.training.load import TrainData, load_trajectories
from trialbook.training.stalls import SLOW_FACTOR, boundary_steps, empty_weight_versions, step_waits

# A task "never finishes" when every one of its trajectories so far ended on a budget (alerts: at least min_stuck)
NEVER_FINISHED = ("agent_timeout", "verifier_timeout")
MIN_HISTORY = 3  # steps before the stall rule judges a wait
STOPPED_FACTOR = 50.0  # no step for this many median waits: the run stopped, nothing is "waiting"


@dataclass(frozen=True)
class StepWait(Result):
    step: int
    wait_s: float | None  # None: a bad timestamp (finished before the previous step / its own start)
    median_before_s: float | None  # median wait of the earlier steps (the stall rule's yardstick)
    slow: bool
    epoch_boundary: bool


@dataclass(frozen=True)
class Waiting(Result):
    """The trainer has logged no step for `waited_s` (a stall in progress)."""

    next_step: int
    waited_s: float
    median_s: float
    epoch_boundary: bool  # the trajectories waiting to be trained start a new pass


@dataclass(frozen=True)
class SignatureBucket(Result):
    wv_from: int
    wv_to: int
    trials: int
    hits: dict[str, int]  # signature name -> trials it matched (only names with a hit)


@dataclass(frozen=True, kw_only=True)
class LiveState(Result):
    run: str
    at: str  # when this snapshot was read (UTC ISO)
    current_step: int | None
    steps: int
    trajectories: int
    in_flight_wv: dict[str, int]  # weight version -> trajectories generated for steps not yet trained
    staleness: dict[str, int]  # versions behind -> trained trajectories
    max_staleness: int | None  # the configured bound (`--staleness`, or the run config's `staleness`)
    empty_wv: list[int]
    waits: list[StepWait]
    bad_timestamps: list[int]  # steps whose wait came out negative
    median_wait_s: float | None
    waiting: Waiting | None
    outcome_pct: dict[str, float]  # outcome -> % of trajectories (only outcomes present)
    bucket: int
    signature_buckets: list[SignatureBucket]
    signature_artifact: dict[str, bool]  # signature name -> a verifier artifact (else: the agent's doing)
    stuck_tasks: list[dict[str, Any]] = field(default_factory=list)  # tasks every trajectory of which ran out of budget


def online_waits(steps: list[dict[str, Any]], boundaries: set[int]) -> tuple[list[StepWait], list[int]]:
    """Each logged step's wait judged against the steps before it only; and the steps with bad timestamps."""
    out: list[StepWait] = []
    history: list[float] = []
    bad: list[int] = []
    for step, wait in step_waits(steps).items():
        median = float(np.median(history)) if len(history) >= MIN_HISTORY else None
        if wait < 0:
            bad.append(step)
            out.append(StepWait(step, None, median, False, step in boundaries))
            continue
        slow = median is not None and median > 0 and wait > SLOW_FACTOR * median
        out.append(StepWait(step, round(wait, 1), None if median is None else round(median, 1), slow,
                            step in boundaries))  # fmt: skip
        history.append(wait)
    return out, bad


def _waiting(steps: list[dict[str, Any]], data: TrainData, median: float | None, now: datetime) -> Waiting | None:
    if not steps or median is None or median <= 0 or steps[-1]["finished_at"] is None:
        return None
    current = steps[-1]["step"]
    waited = (now - steps[-1]["finished_at"]).total_seconds()
    later = (data.step > current) & ~data.outcome_mask("incomplete")  # cut-off trajectories are not arriving
    if not later.any() or waited <= SLOW_FACTOR * median or waited > STOPPED_FACTOR * median:
        return None
    trained = (data.step >= 0) & ~later & (data.epoch >= 0)
    seen_epoch = int(data.epoch[trained].max()) if trained.any() else -1
    new_pass = bool((data.epoch[later & (data.step == data.step[later].min())] > seen_epoch).any()) and seen_epoch >= 0
    return Waiting(current + 1, round(waited, 1), round(median, 1), new_pass)


def _counts(values: np.ndarray, weights: np.ndarray) -> dict[str, int]:
    uniq, inv = np.unique(values, return_inverse=True)
    sums = np.bincount(inv, weights=weights, minlength=len(uniq))
    return {str(int(v)): int(s) for v, s in zip(uniq, sums, strict=True) if s}


class SignatureCache:
    """Signatures matched per trial (id -> (wv, names)), filled incrementally: a refresh reads only new trials."""

    def __init__(self) -> None:
        self.last_id = 0
        self.by_trial: dict[int, tuple[int, list[str]]] = {}

    def update(self, ledger: Ledger, run_id: int) -> None:
        from trialbook.audit.regrade import evidence
        from trialbook.audit.signatures import matches
        from trialbook.ledger.schema import trials

        for ev in evidence(ledger, run_id, where=trials.c.id > self.last_id):
            t = ev.trial
            self.by_trial[t.id] = (-1 if t.wv is None else t.wv, matches(ev))
            self.last_id = max(self.last_id, t.id)

    def buckets(self, size: int) -> list[SignatureBucket]:
        grouped: dict[int, tuple[list[int], dict[str, int]]] = {}
        for wv, names in self.by_trial.values():
            if wv < 0:
                continue
            cell = grouped.setdefault(wv // size, ([0], {}))
            cell[0][0] += 1
            for n in names:
                cell[1][n] = cell[1].get(n, 0) + 1
        return [
            SignatureBucket(b * size, b * size + size - 1, count[0], dict(sorted(hits.items())))
            for b, (count, hits) in sorted(grouped.items())
        ]


def _configured_staleness(ledger: Ledger, run_name: str) -> int | None:
    value = (ledger.get_run(run_name).config or {}).get("staleness")
    return value if type(value) is int else None


def stuck_tasks(data: TrainData) -> list[dict[str, Any]]:
    """Tasks whose every trajectory so far ended on a budget (NEVER_FINISHED outcomes)."""
    if not data.trajectories:
        return []
    codes = [OUTCOME_LIST.index(o) for o in NEVER_FINISHED]
    over = np.isin(data.outcome, codes)
    total = np.bincount(data.task, weights=data.n, minlength=len(data.task_names))
    hit = np.bincount(data.task, weights=data.n * over, minlength=len(data.task_names))
    out = []
    for task in np.flatnonzero((total > 0) & (hit == total)):
        m = data.task == task
        outcomes = {OUTCOME_LIST[c]: data.count(m & (data.outcome == c)) for c in codes}
        out.append({"task_id": data.task_names[task], "trajectories": int(total[task]),
                    "outcomes": {k: v for k, v in outcomes.items() if v}})  # fmt: skip
    return sorted(out, key=lambda x: (-x["trajectories"], x["task_id"]))


def live_state(
    ledger: Ledger,
    run_name: str,
    *,
    bucket: int = 5,
    max_staleness: int | None = None,
    signatures: SignatureCache | None = None,
    now: datetime | None = None,
) -> LiveState:
    from trialbook.audit.signatures import SIGNATURES

    run = ledger.get_run(run_name)
    now = now or datetime.now(UTC)
    steps = load_steps(ledger, run.id)
    data = load_trajectories(ledger, run.id)
    current = steps[-1]["step"] if steps else None
    waits, bad = online_waits(steps, boundary_steps(data))
    good = [w.wait_s for w in waits if w.wait_s is not None]
    median = float(np.median(good)) if good else None
    has_step = (data.step >= 0) & (data.wv >= 0)
    later = has_step & (data.step > (current if current is not None else -1))
    trained = has_step & ~later
    total = data.trajectories
    outcome = {}
    for code, name in enumerate(OUTCOME_LIST):
        k = data.count(data.outcome == code)
        if k:
            outcome[name] = round(100 * k / total, 2)
    cache = signatures if signatures is not None else SignatureCache()
    cache.update(ledger, run.id)
    return LiveState(
        run=run_name,
        at=now.isoformat(),
        current_step=current,
        steps=len(steps),
        trajectories=total,
        in_flight_wv=_counts(data.wv[later], data.n[later]),
        staleness=_counts(data.step[trained] - 1 - data.wv[trained], data.n[trained]),
        max_staleness=max_staleness if max_staleness is not None else _configured_staleness(ledger, run_name),
        empty_wv=empty_weight_versions(data.wv),
        waits=waits,
        bad_timestamps=bad,
        median_wait_s=None if median is None else round(median, 1),
        waiting=_waiting(steps, data, median, now),
        outcome_pct=outcome,
        bucket=bucket,
        signature_buckets=cache.buckets(bucket),
        signature_artifact={s.name: s.artifact for s in SIGNATURES},
        stuck_tasks=stuck_tasks(data),
    )

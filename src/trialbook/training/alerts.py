"""Alerts on a running training run: one table of rules (`ALERTS`, printed by `trialbook train alerts`).

Each rule reads a `live.LiveState` (and the thresholds in `Thresholds`) and returns the alerts it
raises now; an alert's `key` names the event, so `train watch` prints and posts each event once however
many refreshes see it. Add a rule by adding a row.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from trialbook.result_types import Result
from trialbook.training.live import NEVER_FINISHED
from trialbook.training.stalls import SLOW_FACTOR

if TYPE_CHECKING:
    from trialbook.training.live import LiveState
    from trialbook.training.prefetch import PrefetchEstimate


@dataclass
class Thresholds:
    infra_error_pct: float = 5.0  # infrastructure errors above this share of the latest bucket's trajectories
    min_bucket: int = 20  # trajectories a bucket needs before its shares are judged
    signature_rise_pp: float = 5.0  # latest bucket's share above the lowest earlier bucket by this many points
    min_signature_hits: int = 3
    min_stuck: int = 8  # trajectories of a task, all over budget, before it "never finishes"
    gpus: int | None = None  # prices a drain in GPU-hours


@dataclass(frozen=True, kw_only=True)
class Alert(Result):
    rule: str
    key: str  # one event: printed and posted once
    step: int | None  # the trainer's current step when raised
    message: str
    details: dict[str, Any] = field(default_factory=dict)


Check = Callable[["LiveState", Thresholds, "Context"], list[Alert]]


@dataclass
class Context:
    """What a rule may need beyond the snapshot: the simulator's estimate, computed once per watch."""

    prefetch: Callable[[], PrefetchEstimate | None] = lambda: None


class AlertRule(NamedTuple):
    name: str
    meaning: str
    threshold: str
    check: Check


def secs(v: float | None) -> str:
    """Seconds for people: 4500 -> '4500 s', 0.37 -> '0.37 s' (a replay runs time faster)."""
    if v is None:
        return "-"
    return f"{v:.0f} s" if abs(v) >= 10 else f"{v:.2g} s"


def _stall_events(s: LiveState) -> list[tuple[int, float, float, bool, bool]]:
    """(step, wait, median, at an epoch boundary, still waiting) of every slow step, finished or in progress."""
    out = [(w.step, w.wait_s or 0.0, w.median_before_s or 0.0, w.epoch_boundary, False) for w in s.waits if w.slow]
    if s.waiting is not None:
        w = s.waiting
        out.append((w.next_step, w.waited_s, w.median_s, w.epoch_boundary, True))
    return out


def _drain(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    out = []
    for step, wait, median, boundary, ongoing in _stall_events(s):
        if not boundary:
            continue
        est = ctx.prefetch()
        verb = "has waited" if ongoing else "waited"
        msg = (f"epoch-boundary drain: step {step} {verb} {secs(wait)} (median step {secs(median)}) while the"
               " rollout buffer refilled from zero at the start of a new pass")  # fmt: skip
        details: dict[str, Any] = {"stalled_step": step, "wait_s": wait, "median_s": median, "in_progress": ongoing}
        if s.empty_wv:
            details["empty_wv"] = s.empty_wv
        if est is not None:
            details["prefetch"] = est.to_json()
            saved = secs(est.saved_s_per_boundary)
            msg += f"; the pipeline simulator estimates cross-epoch prefetch would save ~{saved} per boundary"
            if t.gpus:
                msg += f" (~{t.gpus * est.saved_s_per_boundary / 3600:.1f} GPU-hours on {t.gpus} GPUs)"
        out.append(Alert(rule="epoch_boundary_drain", key=f"epoch_boundary_drain:{step}", step=s.current_step,
                         message=msg, details=details))  # fmt: skip
    return out


def _slow_step(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    return [
        Alert(rule="slow_step", key=f"slow_step:{step}", step=s.current_step,
              message=f"step {step} {'has waited' if ongoing else 'waited'} {secs(wait)}, over {SLOW_FACTOR:g} x the"
                      f" median step of {secs(median)} (not at an epoch boundary)",
              details={"stalled_step": step, "wait_s": wait, "median_s": median, "in_progress": ongoing})
        for step, wait, median, boundary, ongoing in _stall_events(s)
        if not boundary
    ]  # fmt: skip


def _staleness(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    if s.max_staleness is None:
        return []
    over = {int(k): v for k, v in s.staleness.items() if int(k) > s.max_staleness}
    if not over:
        return []
    n, worst = sum(over.values()), max(over)
    return [Alert(rule="staleness_over_bound", key=f"staleness_over_bound:{worst}", step=s.current_step,
                  message=f"{n} trained trajectories were more than {s.max_staleness} weight versions behind"
                          f" (up to {worst})", details={"bound": s.max_staleness, "over": over})]  # fmt: skip


def _infra(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    share = s.outcome_pct.get("infra_error", 0.0)
    if s.trajectories < t.min_bucket or share <= t.infra_error_pct:
        return []
    # one alert per whole percent above the threshold: a rate that keeps rising is said again
    return [Alert(rule="infra_error_rate", key=f"infra_error_rate:{int(share)}", step=s.current_step,
                  message=f"infrastructure errors are {share:.1f}% of {s.trajectories} trajectories"
                          f" (threshold {t.infra_error_pct:g}%)", details={"pct": share})]  # fmt: skip


def _signature(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    full = [b for b in s.signature_buckets if b.trials >= t.min_bucket]
    if len(full) < 2:
        return []
    out = []
    last = full[-1]
    for name, hits in last.hits.items():
        share = 100 * hits / last.trials
        earlier = [100 * b.hits.get(name, 0) / b.trials for b in full[:-1]]
        if hits < t.min_signature_hits or share - min(earlier) < t.signature_rise_pp:
            continue
        kind = "verifier artifact" if s.signature_artifact.get(name) else "signature"
        shares = " -> ".join(f"{x:.1f}" for x in [*earlier, share])
        out.append(Alert(
            rule="signature_rising", key=f"signature_rising:{name}:{last.wv_from}", step=s.current_step,
            message=f"{kind} '{name}' rising across weight-version buckets: {shares}% of trials"
                    f" (wv {last.wv_from}-{last.wv_to}: {hits} of {last.trials})",
            details={"signature": name, "artifact": s.signature_artifact.get(name), "shares_pct": [*earlier, share]},
        ))  # fmt: skip
    return out


def _never_finishes(s: LiveState, t: Thresholds, ctx: Context) -> list[Alert]:
    return [
        Alert(rule="task_never_finishes", key=f"task_never_finishes:{x['task_id']}", step=s.current_step,
              message=f"task {x['task_id']}: all {x['trajectories']} trajectories so far ran out of budget"
                      f" ({', '.join(f'{k} {v}' for k, v in x['outcomes'].items())})", details=x)
        for x in s.stuck_tasks
        if x["trajectories"] >= t.min_stuck
    ]  # fmt: skip


_D = Thresholds()  # the defaults, as the table prints them
ALERTS: tuple[AlertRule, ...] = (
    AlertRule("epoch_boundary_drain", "a step at the start of a new pass waits while the rollout buffer refills from"
              " zero (raised while it waits, or when it arrives); with the pipeline simulator's estimate of what"
              " cross-epoch prefetch would save", f"wait > {SLOW_FACTOR:g} x median of earlier steps", _drain),
    AlertRule("slow_step", "a step waits far longer than the steps before it, not at an epoch boundary",
              f"wait > {SLOW_FACTOR:g} x median of earlier steps", _slow_step),
    AlertRule("staleness_over_bound", "trained trajectories generated by weights older than the configured bound",
              "step - 1 - wv > --staleness (or the run config's staleness)", _staleness),
    AlertRule("infra_error_rate", "infrastructure errors (sandbox, daemon, endpoint) take a share of the trajectories",
              f"infra_error > --infra-error-pct ({_D.infra_error_pct:g}%) of >= {_D.min_bucket} trajectories", _infra),
    AlertRule("signature_rising", "a reward-hacking or verifier-artifact signature (audit.signatures, every row by"
              " name) takes a growing share of trials across weight-version buckets",
              f"latest bucket >= lowest earlier + {_D.signature_rise_pp:g} points, >= {_D.min_signature_hits} trials,"
              f" buckets of >= {_D.min_bucket}", _signature),
    AlertRule("task_never_finishes", "a task none of whose trajectories finished within its budget",
              f"all >= {_D.min_stuck} trajectories {' or '.join(NEVER_FINISHED)}", _never_finishes),
)  # fmt: skip
BY_NAME = {r.name: r for r in ALERTS}


def evaluate(state: LiveState, thresholds: Thresholds, ctx: Context | None = None) -> list[Alert]:
    ctx = ctx or Context()
    return [a for rule in ALERTS for a in rule.check(state, thresholds, ctx)]


def post(url: str, run: str, alert: Alert, timeout: float = 5.0) -> str | None:
    """POST the alert as JSON to a webhook; the reason it failed, or None."""
    body = json.dumps({"run": run, **alert.to_json()}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return None if 200 <= res.status < 300 else f"HTTP {res.status}"
    except OSError as exc:  # URLError, HTTPError, timeouts
        return str(getattr(exc, "reason", None) or exc)


@dataclass(frozen=True)
class AlertRuleRow(Result):
    """One line of `trialbook train alerts`."""

    alert: str
    meaning: str
    threshold: str


def rule_rows() -> list[AlertRuleRow]:
    return [AlertRuleRow(r.name, r.meaning, r.threshold) for r in ALERTS]

"""Human output for `train watch` (a snapshot, then a line per new step and per new alert) and `train alerts`."""

from __future__ import annotations

from trialbook.report.layout import line, table
from trialbook.training.alerts import Alert, AlertRuleRow, secs
from trialbook.training.batch_selection import SelectionReport
from trialbook.training.live import LiveState, StepWait
from trialbook.training.stalls import SLOW_FACTOR


def _counts(d: dict[str, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in d.items()) or "none"


def step_line(w: StepWait) -> str:
    if w.wait_s is None:
        return f"step {w.step}: bad timestamps (finished before it started or before the previous step): no wait"
    verdict = ""
    if w.slow:
        where = ", epoch boundary" if w.epoch_boundary else ""
        verdict = f"  SLOW (> {SLOW_FACTOR:g} x median {secs(w.median_before_s)}){where}"
    return f"step {w.step}: waited {secs(w.wait_s)}{verdict}"


def alert_line(a: Alert) -> str:
    return f"ALERT {a.rule}: {a.message}"


def print_state(s: LiveState, alerts: list[Alert]) -> None:
    line(f"run {s.run}: step {s.current_step if s.current_step is not None else '-'} ({s.steps} steps logged,"
         f" {s.trajectories} trajectories) at {s.at[:19]}Z", markup=False)  # fmt: skip
    line(f"weight versions in flight (wv: trajectories not yet trained): {_counts(s.in_flight_wv)}", markup=False)
    bound = "" if s.max_staleness is None else f"; bound {s.max_staleness}"
    line(
        f"staleness of trained trajectories (versions behind: trajectories): {_counts(s.staleness)}{bound}",
        markup=False,
    )
    if s.empty_wv:
        line(f"weight versions with no trajectories: {', '.join(map(str, s.empty_wv))}", markup=False)
    line("outcomes: " + (", ".join(f"{k} {v:.1f}%" for k, v in s.outcome_pct.items()) or "none"), markup=False)
    if s.waits:
        table(["step", "wait", "median before", "stall rule"],
              [[str(w.step), secs(w.wait_s), secs(w.median_before_s),
                ("SLOW" + (" (epoch boundary)" if w.epoch_boundary else "")) if w.slow
                else ("bad timestamps" if w.wait_s is None else "")] for w in s.waits[-12:]],
              title="latest steps (the stall rule as each arrived)")  # fmt: skip
    if s.waiting is not None:
        w = s.waiting
        where = " (the start of a new pass)" if w.epoch_boundary else ""
        line(
            f"waiting for step {w.next_step}{where}: {secs(w.waited_s)} so far vs a median of {secs(w.median_s)}",
            markup=False,
        )
    names = sorted({n for b in s.signature_buckets for n in b.hits})
    if names:
        table(["wv", "trials", *names],
              [[f"{b.wv_from}-{b.wv_to}", str(b.trials), *(f"{100 * b.hits.get(n, 0) / b.trials:.1f}%" for n in names)]
               for b in s.signature_buckets],
              title="signature shares per weight-version bucket (audit signatures)")  # fmt: skip
    else:
        line(f"signatures: none matched in {sum(b.trials for b in s.signature_buckets)} trials", markup=False)
    for a in alerts:
        line(alert_line(a), markup=False)


def print_alert_rules(rows: list[AlertRuleRow]) -> None:
    table(["alert", "threshold", "meaning"], [[r.alert, r.threshold, r.meaning] for r in rows],
          title="training alerts")  # fmt: skip


def print_selection(r: SelectionReport) -> None:
    line(f"{r.run}: {r.generated} rollouts generated, {r.trained} reached a batch of the {r.steps} logged steps;"
         f" {r.never_trained_pct:.1f}% never trained", markup=False)  # fmt: skip
    if r.mean_duration_generated_s is not None:
        line(f"mean duration: generated {secs(r.mean_duration_generated_s)}, trained"
             f" {secs(r.mean_duration_trained_s)}", markup=False)  # fmt: skip
    if r.by_duration:
        table(["duration", "generated", "trained", "never trained %"],
              [[f"{secs(b.from_s)}-{secs(b.to_s)}", str(b.generated), str(b.trained), f"{b.never_trained_pct:.1f}"]
               for b in r.by_duration], title="by duration quartile")  # fmt: skip
        if r.chi2_p is not None:
            line(f"duration quartile vs trained: chi-square p = {r.chi2_p:.2g}", markup=False)
    table(["task", "generated", "trained", "never trained %", "median duration"],
          [[t.task_id, str(t.generated), str(t.trained), f"{t.never_trained_pct:.1f}", secs(t.median_duration_s)]
           for t in r.by_task], title="by task (most dropped first)")  # fmt: skip
    if r.spearman_duration_dropped is not None:
        line(f"over tasks, median duration vs share never trained: Spearman {r.spearman_duration_dropped:+.2f}"
             f" (p = {r.spearman_p:.2g})", markup=False)  # fmt: skip
    for w in r.warnings:
        line(f"warning: {w}", markup=False)

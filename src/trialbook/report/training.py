"""Human output for `train report`, `sim pipeline` and `sim rollouts` (JSON: the results' `to_json()`)."""

from __future__ import annotations

from rich.markup import escape

from trialbook.report.layout import line, table
from trialbook.result_types import Absent
from trialbook.training.report_types import Bucket, PipelineResult, RolloutTruth, TokenAudit, TrainReport

SHARE_LABELS = {
    "agent_timeout": "CBF",
    "p2p_regression": "P2P",
    "format_error": "fmt",
    "context_overflow": "ctx",
    "incomplete": "incompl",
}


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _ci(ci: list[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def _few(few: bool) -> str:
    """The flag beside an interval over fewer than stats.kernel.FEW_TASKS tasks (clipped, small-sample)."""
    return " few tasks" if few else ""


def _span(values: list[float], fmt: str = ".3g") -> str:
    lo, hi = min(values), max(values)
    return f"{lo:{fmt}}" if lo == hi else f"{lo:{fmt}}-{hi:{fmt}}"


def _ranges(values: list[int]) -> str:
    """[37, 38, 39, 42] -> '37-39, 42'."""
    spans: list[list[int]] = []  # [first, last] of each run of consecutive values
    for v in values:
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _metric_clause(buckets: list[Bucket]) -> list[str]:
    names = sorted({m for b in buckets for m in b.metrics})
    parts = []
    for name in names:
        spans = [b.metrics[name] for b in buckets if name in b.metrics]
        first, last = spans[0], spans[-1]
        if len(spans) > 1 and name in ("raw_reward", "reward"):
            parts.append(f"{name} {_span(first)} -> {_span(last)}")
        else:
            parts.append(f"{name} {_span([v for s in spans for v in s])}")
    return parts


def summary_paragraph(r: TrainReport) -> str:
    """The whole report in one paragraph: pass rate early vs late, encounters, metrics, failure shares, stalls."""
    b = [x for x in r.buckets if x.judged]
    rate, per_pass = ("mean reward", "mean reward") if r.metric == "reward" else ("pass rate", "pass@1")
    s = [f"{r.run}: {r.steps} steps, {r.judged} judged of {r.trajectories} trajectories"]
    if b:
        late = "/".join(_pct(x.pass_pct) for x in b[-4:] if x.pass_pct is not None)
        s.append(f"{r.bucket}-version-bucket {rate} {late}% late vs {_pct(b[0].pass_pct)}% early")
    for row in [e for e in r.encounters if e.ci_pp is not None][::-1][:2]:
        s.append(
            f"same task, {_ordinal(row.k)} encounter - 1st = {row.diff_pp:+.1f} {_ci(row.ci_pp)} over {row.tasks} tasks"
        )
    passes = [p for p in r.passes if p.pass_pct is not None]
    if passes:
        most = max(p.tasks for p in passes)
        s.append(
            f"per-pass {per_pass} "
            + " -> ".join(_pct(p.pass_pct) + (f" ({p.tasks})" if p.tasks < 0.9 * most else "") for p in passes)
        )
    s.extend(_metric_clause(b))
    if b:
        share = [x.outcome_pct for x in b]
        cbf = [x["agent_timeout"] or 0.0 for x in share]
        p2p = [x["p2p_regression"] or 0.0 for x in share]
        fmt = [x["format_error"] or 0.0 for x in share]
        s.append(f"CBF {cbf[0]:.1f}% -> {cbf[-1]:.1f}%; P2P regressions {_span(p2p, '.1f')}%")
        s.append(f"format errors <= {max(fmt):.1f}%")
    st = r.stalls
    if st.empty_wv:
        s.append(f"weight versions {_ranges(st.empty_wv)} produced no trajectories")
    for on_boundary in (True, False):
        slow = [x for x in st.slow_steps if x.epoch_boundary == on_boundary]
        if slow:
            which = ", ".join(str(x.step) for x in slow)
            waits = _span([x.wait_s for x in slow], ".0f")
            where = " at epoch boundaries" if on_boundary else " (not at an epoch boundary)"
            s.append(
                f"step{'s' if len(slow) > 1 else ''} {which} waited {waits} s{where}"
                f" vs a median step of {st.median_step_s:.0f} s"
            )
    if st.lost_gpu_hours is not None:
        s.append(f"~{st.lost_gpu_hours:.1f} GPU-hours lost to slow steps")
    return "; ".join(s) + "."


def print_train_report(r: TrainReport) -> None:
    reward = r.metric == "reward"
    rate = "reward %" if reward else "pass %"
    if reward:
        line("metric: mean reward of the judged trajectories, in % (--metric reward)", markup=False)
    if r.excluded_repos:
        line("excluded: " + ", ".join(f"{k} ({v} trajectories)" for k, v in r.excluded_repos.items()), markup=False)
    excluded = bool(r.excluded_repos)
    rows = []
    for b in r.buckets:
        ci = "-" if b.ci_pct is None else f"{b.ci_pct[0]:.0f}-{b.ci_pct[1]:.0f}"
        all_repos = None if isinstance(b.pass_pct_all_repos, Absent) else b.pass_pct_all_repos
        rows.append([
            f"{b.wv_from}-{b.wv_to}", str(b.trajectories), str(b.judged), _pct(b.pass_pct), ci,
            *([_pct(all_repos)] if excluded else []), *(_pct(b.outcome_pct[k]) for k in SHARE_LABELS),
        ])  # fmt: skip
    heads = ["wv", "traj", "judged", rate, "95% CI", *(["all %"] if excluded else []), *SHARE_LABELS.values()]
    table(heads, rows, title="by weight version (% of trajectories)")
    names = sorted({m for b in r.buckets for m in b.metrics})
    if names:
        table(
            ["steps", *names],
            [[f"{b.wv_from}-{b.wv_to}", *(_span(b.metrics[n]) if n in b.metrics else "-" for n in names)]
             for b in r.buckets],
            title="step metrics (min-max per bucket)",
        )  # fmt: skip
    if r.passes:
        table(
            ["pass", "tasks", "trajectories", "judged", rate],
            [[str(p.pass_), str(p.tasks), str(p.trajectories), str(p.judged), _pct(p.pass_pct)] for p in r.passes],
            title="by pass over the pool",
        )
    if r.encounters:
        rows = []
        for e in r.encounters:
            new = "-" if e.new_task_pct is None else f"{e.new_task_pct:.1f} ({e.new_tasks})"
            did = "-" if e.did_pp is None else f"{e.did_pp:+.1f} {_ci(e.did_ci_pp)}"
            rows.append([str(e.k), str(e.tasks), _pct(e.first_pct), _pct(e.kth_pct),
                         f"{e.diff_pp:+.2f}", _ci(e.ci_pp) + _few(e.few_tasks), new, did])  # fmt: skip
        heads = ["k", "tasks", "1st %", "k-th %", "k-th - 1st (pp)", "95% CI", "new tasks %", "k-th - new (95% CI)"]
        table(heads, rows, title="same-task encounters")
        last = r.last_minus_first
        if last:
            line(
                f"last - first (tasks graded >= 3 times): {last.diff_pp:+.2f} {_ci(last.ci_pp)}{_few(last.few_tasks)}"
                f" over {last.tasks} tasks",
                markup=False,
            )
    if isinstance(r.tokens, TokenAudit):
        print_token_audit(r.tokens)
    if r.hacking:  # reward-hacking signatures of the trajectories' changes (verify/hacks.py)
        names = [n for n in r.hacking[0].pct if any(h.pct.get(n) for h in r.hacking)]
        table(["wv", "traj", *(n.removeprefix("hack_") for n in names)],
              [[f"{h.wv_from}-{h.wv_to}", str(h.trajectories), *(_pct(h.pct[n]) for n in names)] for h in r.hacking],
              title="hacking signatures, %")  # fmt: skip
    for w in r.warnings:
        line(f"[yellow]warning:[/yellow] {escape(w)}")
    line(summary_paragraph(r), markup=False)


def print_token_audit(a: TokenAudit) -> None:
    """Token-exactness of a run's recorded trajectories (training/trajectories.token_audit)."""
    table(
        ["wv", "trials", "turns", "broken prefixes", "broken trials"],
        [["-" if w.wv is None else str(w.wv), str(w.trials), str(w.turns), str(w.prefix_breaks),
          str(w.broken_trials)] for w in a.by_wv],
        title="token-exactness by weight version (each turn's prompt extends the previous prompt + completion)",
    )  # fmt: skip
    stale = "-" if a.staleness_max is None else f"mean {a.staleness_mean:g}, max {a.staleness_max}"
    line(
        f"tokens: {a.with_tokens} trials, {a.turns} turns, {a.prefix_breaks} broken prefixes in {a.broken_trials}"
        f" trials, {a.inexact_trials} trials with ids not the engine's own; staleness (step - wv) {stale}",
        markup=False,
    )
    for b in a.broken:
        line(f"  {a.tag}: trial {b.trial_id} ({b.task_id} #{b.attempt}, step {b.step}, wv {b.wv})"
             f" turns {', '.join(map(str, b.broken_turns))}", markup=False)  # fmt: skip
    if a.masked_groups:
        line(f"masked groups ({len(a.masked_groups)}): {', '.join(a.masked_groups)}", markup=False)


def print_pipeline(r: PipelineResult) -> None:
    c = r.config  # the PipelineConfig's fields
    mode = "cross-epoch sampling" if c["cross_epoch"] else "per-epoch loader (reset at each epoch end)"
    line(
        f"B={c['batch']} G={c['group']} S={c['staleness']} P={c['pool']} E={c['epochs']} W={c['workers']}, {mode}",
        markup=False,
    )
    line(
        f"{r.steps} steps in {r.total_s / 3600:.2f} h = {r.steps_per_hour:.2f} steps/h;"
        f" trainer idle {100 * r.trainer_idle_fraction:.1f}%;"
        f" median step interval {r.median_step_interval_s:.0f} s",
        markup=False,
    )
    table(
        ["epoch", "first step", "waited (s)", "stall"],
        [[str(b.epoch), str(b.step), f"{b.wait_s:.0f}", "STALL" if b.stall else ""] for b in r.boundaries],
        title="epoch boundaries",
    )
    if r.empty_wv:
        line(f"weight versions with no trajectories: {_ranges(r.empty_wv)}", markup=False)


def print_truth(t: RolloutTruth) -> None:
    steps = f", steps to {t.steps_out}" if t.steps_out else ""
    line(f"wrote {t.trajectories} trajectories to {t.out}{steps}", markup=False)
    gains = ", ".join(f"{k}: {v:+.2f}" for k, v in t.encounter_gain_pp.items())
    line(
        f"ground truth: {t.tasks} tasks, {t.steps} steps, first-encounter pass {t.first_encounter_pct:.1f}%",
        markup=False,
    )
    line(f"  encounter gain vs 1st (pp): {gains}", markup=False)
    line(
        f"  stall steps: {t.stall_steps} ({t.stall_s:.0f} s); empty weight versions: {_ranges(t.empty_wv) or 'none'}",
        markup=False,
    )
    line(f"  incomplete (cut-off) trajectories: {t.incomplete}", markup=False)

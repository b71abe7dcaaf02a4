"""Plots as inline SVG (matplotlib's SVG backend: no JavaScript, no network, the same in a page and a file).

Each function takes the dicts the computation modules return (stats.compare, training report,
audit) and only draws them; nothing here computes a statistic.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import matplotlib

if TYPE_CHECKING:
    from trialbook.audit.failures import AuditResult
    from trialbook.stats.comparison import CompareResult
    from trialbook.training.report_types import SlowStep, TrainReport

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen
from matplotlib.ticker import MaxNLocator  # noqa: E402

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: smaller files, selectable labels
        "svg.hashsalt": "trialbook",  # stable ids, so a report is reproducible byte for byte
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)

BLUE, ORANGE, GREY, RED, GREEN = "#1f77b4", "#ff7f0e", "#888888", "#d62728", "#2ca02c"


def _integer_x(ax: Any) -> None:
    """Weight versions, steps and encounters are whole numbers: no 2.5 on the axis (a single point, whose axis
    matplotlib spans by fractions, gets a span of two whole numbers around it)."""
    lo, hi = ax.get_xlim()
    if hi - lo < 2:
        mid = round((lo + hi) / 2)
        ax.set_xlim(mid - 1, mid + 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _svg(fig: Any, title: str) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Title": title})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def forest(res: CompareResult) -> str:
    """Paired differences (pp) with their adjusted CIs, one row per candidate and subset; claim line."""
    rows = res.comparisons
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.2))
    labels = []
    for i, r in enumerate(rows):
        y = len(rows) - 1 - i
        labels.append(r.candidate + ("" if r.subset == "all" else f" [{r.subset}]"))
        lo, hi = r.ci_adjusted_pp or (None, None)
        if r.diff_pp is None or lo is None or hi is None:
            continue
        color = GREEN if r.claim else (BLUE if r.subset == "all" else GREY)
        ax.plot([lo, hi], [y, y], color=color, lw=2)
        ax.plot([r.diff_pp], [y], "o", color=color)
        ax.annotate(f"{r.wins}/{r.losses}/{r.ties}", (hi, y), xytext=(4, -3), textcoords="offset points",
                    fontsize=7, color=GREY)  # fmt: skip
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(res.min_diff_pp, color=ORANGE, lw=1, ls="--", label=f"claim line +{res.min_diff_pp:g} pp")
    ax.set_yticks(range(len(rows)), labels[::-1])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    level = rows[0].ci_level if rows else 0.95
    ax.set_xlabel(f"candidate - baseline (pp), {100 * level:.1f}% CI; W/L/T at right")
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    return _svg(fig, "forest plot")


def pass_rate(report: TrainReport) -> str:
    """Pass rate per weight-version bucket with its 95% task-cluster CI band."""
    b = [x for x in report.buckets if x.pass_pct is not None]
    fig, ax = plt.subplots(figsize=(7, 3))
    x = [(r.wv_from + r.wv_to) / 2 for r in b]
    ax.plot(x, [r.pass_pct for r in b if r.pass_pct is not None], "o-", color=BLUE, ms=3, label="pass %")
    band = [(xi, r.ci_pct) for xi, r in zip(x, b, strict=True) if r.ci_pct]
    if band:
        ax.fill_between([p[0] for p in band], [p[1][0] for p in band], [p[1][1] for p in band], color=BLUE,
                        alpha=0.2, lw=0, label="95% CI")  # fmt: skip
    ax.set_xlabel(f"weight version (buckets of {report.bucket})")
    _integer_x(ax)
    ax.set_ylabel("pass rate (%)")
    ax.legend(fontsize=7, frameon=False)
    return _svg(fig, "pass rate by weight version")


def outcome_shares(report: TrainReport, labels: dict[str, str]) -> str:
    """Failure shares per bucket; a bucket with nothing graded (all cut off: incomplete) is left out, not drawn
    as a fall to 0 (its shares of graded failures are unknown, not zero)."""
    b = [r for r in report.buckets if r.judged]
    fig, ax = plt.subplots(figsize=(7, 3))
    x = [(r.wv_from + r.wv_to) / 2 for r in b]
    for key, label in labels.items():
        ax.plot(x, [r.outcome_pct[key] or 0.0 for r in b], "-", lw=1.5, label=label)
    left_out = " (buckets with nothing graded left out)" if len(b) < len(report.buckets) else ""
    ax.set_xlabel("weight version" + left_out)
    _integer_x(ax)
    ax.set_ylabel("% of trajectories")
    ax.legend(fontsize=7, frameon=False, ncol=len(labels))
    return _svg(fig, "outcome shares by weight version")


def encounters(report: TrainReport) -> str:
    rows = [e for e in report.encounters if e.diff_pp is not None]
    fig, ax = plt.subplots(figsize=(7, 3))
    for e in rows:
        if e.ci_pp:
            ax.plot([e.k, e.k], e.ci_pp, color=BLUE, lw=2)
    ax.plot([e.k for e in rows], [e.diff_pp for e in rows if e.diff_pp is not None], "o", color=BLUE)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xlabel("k-th encounter of the same task")
    _integer_x(ax)
    ax.set_ylabel("k-th - 1st (pp), 95% CI")
    return _svg(fig, "gain by encounter")


def step_timing(waits: dict[int, float], slow: list[SlowStep], median: float | None) -> str:
    """Each optimizer step's wait (s); slow steps marked, epoch-boundary stalls in red. A negative wait (a step
    whose clock went backwards) is a bad timestamp, not a wait: left out of the line and counted in its label."""
    fig, ax = plt.subplots(figsize=(7, 3))
    steps = sorted(waits)
    bad = sum(1 for s in steps if waits[s] < 0)
    ys = [waits[s] if waits[s] >= 0 else float("nan") for s in steps]
    label = "step wait" + (f" ({bad} step{'s' if bad > 1 else ''} with bad timestamps left out)" if bad else "")
    ax.plot(steps, ys, "-", color=GREY, lw=1, label=label)
    for on_boundary, color, label in ((True, RED, "stall at epoch boundary"), (False, ORANGE, "slow step")):
        pts = [s for s in slow if s.epoch_boundary == on_boundary]
        if pts:
            ax.plot([p.step for p in pts], [p.wait_s for p in pts], "v", color=color, label=label)
    if median:
        ax.axhline(median, color=BLUE, lw=0.8, ls="--", label=f"median {median:.0f} s")
    ax.set_xlabel("optimizer step")
    _integer_x(ax)
    ax.set_ylim(bottom=0)
    ax.set_ylabel("wait (s)")
    ax.legend(fontsize=7, frameon=False)
    return _svg(fig, "step timing")


def signature_plot(audit: AuditResult) -> str:
    """Trials per log signature, and the part of them that are P2P penalties."""
    items = list(audit.by_signature.items())
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(items) + 1))
    y = list(range(len(items)))[::-1]
    ax.barh(y, [s.trials for _, s in items], color=BLUE, alpha=0.4, label="trials")
    ax.barh(y, [s.p2p_penalties for _, s in items], color=RED, label="P2P penalties")
    ax.set_yticks(y, [name for name, _ in items])
    ax.set_xlabel("trials")
    ax.legend(fontsize=7, frameon=False)
    return _svg(fig, "log signatures")

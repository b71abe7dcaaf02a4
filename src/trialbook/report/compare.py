"""Human and Markdown output for `compare`, `plan` and `prereg check` (JSON: the results' `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from trialbook.report import layout
from trialbook.stats.comparison import CI, CompareResult, Comparison, Gap, PreregCheck, RepoComparison

if TYPE_CHECKING:  # stats.power imports numpy: `plan` loads it when it runs, not when the CLI starts
    from trialbook.stats.power import PowerPlan


def _n(x: float | None, fmt: str = "{:+.2f}") -> str:
    return "-" if x is None else fmt.format(x)


def _ci(ci: CI | None) -> str:
    return "-" if ci is None or ci[0] is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def _p(p: float | None) -> str:
    if p is None or p != p:
        return "-"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def _with_subset(res: CompareResult) -> bool:
    return any(r.subset != "all" for r in res.comparisons)


def _family(res: CompareResult) -> bool:
    return res.looks is not None and res.looks.family is not None


def _cells(r: Comparison, subset: bool = True, res: CompareResult | None = None) -> list[str]:
    few = " few tasks" if r.few_tasks else ""
    ci = _ci(r.ci_adjusted_pp) + few
    if res is not None and _family(res):  # each look its own level: say it in the cell
        ci = f"{_ci(r.ci_adjusted_pp)} at {100 * r.ci_level:.2f}%{few}"
    cells = [
        r.candidate, r.subset, str(r.tasks_paired), _n(r.base_pct, "{:.1f}%"),
        _n(r.cand_pct, "{:.1f}%"), _n(r.diff_pp), ci,
        f"{r.wins}/{r.losses}/{r.ties}", _p(r.p_adjusted), "YES" if r.claim else "no",
    ]  # fmt: skip
    fam = res is not None and _family(res)
    if fam:
        cells.insert(1, str(res.looks.look.get(r.candidate, "-")))  # type: ignore[union-attr]
    at = 2 if fam else 1  # the subset column
    return cells if subset else cells[:at] + cells[at + 1 :]


def _headers(res: CompareResult) -> list[str]:
    unit = "" if res.metric == "resolved" else " reward"
    if _family(res):  # every look judged alone at its share of the family's alpha (stats/looks.py)
        cols = ["candidate", "look", "subset", "tasks", f"base{unit}", f"cand{unit}", "diff pp", "CI (look's level)",
                "W/L/T", "p (look-adj.)", "claim"]  # fmt: skip
        return cols if _with_subset(res) else cols[:2] + cols[3:]
    several = res.candidates_considered > 1
    level = res.comparisons[0].ci_level if res.comparisons else 0.95
    ci = f"{100 * level:.1f}% CI (adj.)" if several else "95% CI"
    given = len({r.candidate for r in res.comparisons})
    # Holm over the candidates given; Bonferroni when picked among more or over --split's rows
    p = ("p (Holm)" if res.candidates_considered == given else "p (Bonf.)") if several else "p"
    cols = ["candidate", "subset", "tasks", f"base{unit}", f"cand{unit}", "diff pp", ci, "W/L/T", p, "claim"]
    return cols if _with_subset(res) else cols[:1] + cols[2:]


def _subset_label(r: Comparison) -> str:
    return "" if r.subset == "all" else f" [{r.subset}]"


def _details(r: Comparison, several: bool) -> str:
    extra = f"95% CI unadjusted {_ci(r.ci_pp)}, p unadjusted {_p(r.p_value)}, " if several else ""
    corr = "-" if r.correlation is None else f"{r.correlation:.2f}"
    boot = f", bootstrap 95% CI {_ci(r.bootstrap_ci_pp)}" if r.bootstrap_ci_pp else ""
    unpaired = {k: v for k, v in (r.unpaired or {}).items() if v}
    if unpaired:
        boot += "; not paired: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in unpaired.items())
    return (
        f"{r.candidate}{_subset_label(r)}: SE {_n(r.se_pp, '{:.2f}')} pp, {extra}"
        f"sign test p {_p(r.sign_p)},"
        f" task-score correlation {corr}{boot}"
    )


WORST = {"worst_low": "low (base's as successes, candidate's as failures)",
         "worst_high": "high (base's as failures, candidate's as successes)"}  # fmt: skip


def sensitivity_lines(res: CompareResult) -> list[str]:
    """Per candidate: the verdict with ungraded trials dropped / as failures / as successes, then the two
    worst cases (the runs' ungraded trials counted opposite ways: true bounds on the difference; low's lower
    and high's upper CI end the extremes over every assignment of the ungraded trials: the interval is
    monotone in the task differences)."""
    sens = res.sensitivity
    if not sens:
        return []
    n = ", ".join(f"{run} {k}" for run, k in sens.ungraded_trials.items() if k)
    out = [f"sensitivity to ungraded trials ({n}):"]
    for cand, verdicts in sens.verdicts.items():
        parts, worst = [], []
        for name, v in verdicts.items():
            mark = " [preregistered]" if name == sens.preregistered else ""
            claim = "claim" if v.claim else "no claim"
            if name in WORST:
                worst.append(f"{WORST[name]} {_n(v.diff_pp)} {_ci(v.ci_adjusted_pp)} {claim}")
            else:
                parts.append(f"{name.replace('_', ' ')}{mark} {_n(v.diff_pp)} {_ci(v.ci_adjusted_pp)} {claim}")
        out.append(f"  {cand}: " + "; ".join(parts))
        if worst:
            out.append(f"  {cand} worst cases: " + "; ".join(worst))
    return out


def _listed(res: CompareResult) -> list[str]:
    which = res.listed
    if not which:
        return []
    out = []
    for r in res.comparisons:
        if r.subset == "all":
            ids = r.tasks_won if which == "wins" else r.tasks_lost
            out += [f"# {which} of {r.candidate} over {res.baseline}: {len(ids)} tasks", *ids]
    return out


def print_compare(res: CompareResult) -> None:
    several = res.candidates_considered > 1
    if res.listed:  # the task ids alone, ready for --exclude-tasks / --split
        print("\n".join(_listed(res)))
        return
    metric = " (mean reward)" if res.metric == "reward" else ""
    rows = [_cells(r, _with_subset(res), res) for r in res.comparisons]
    fam = f", family {res.looks.family}" if _family(res) else ""  # type: ignore[union-attr]
    layout.table(_headers(res), rows, title=f"baseline: {res.baseline}{metric}{fam}")
    for r in res.comparisons:
        layout.line(_details(r, several), markup=False)
        binary = " on resolved (binary)" if res.metric == "reward" else ""  # pass@k counts resolved attempts
        for k, v in (r.pass_at_k or {}).items():
            few = " few tasks" if v.few_tasks else ""
            layout.line(
                f"  {k}{binary}: {_n(v.base_pct, '{:.1f}%')} -> {_n(v.cand_pct, '{:.1f}%')},"
                f" diff {_n(v.diff_pp)} pp, 95% CI {_ci(v.ci_pp)}{few} ({v.tasks} tasks)",
                markup=False,
            )
    layout.line(
        f"claim = diff >= {res.min_diff_pp:g} pp and the lower CI bound > 0"
        + (
            " (each look at its level, below)"
            if _family(res)
            else f" (CIs Bonferroni-widened for {res.candidates_considered} candidates)"
            if several
            else ""
        ),  # fmt: skip
        markup=False,
    )
    for line in meaning_lines(res):
        layout.line(line, markup=False)
    for gap in res.split.gaps if res.split else []:
        layout.line(gap_line(gap), markup=False)
    for cand, repo_rows in (res.by_repo or {}).items():
        layout.table(REPO_HEADERS, [_repo_cells(r) for r in repo_rows], title=f"by repo: {cand}")
    for line in sensitivity_lines(res):
        layout.line(line, markup=False)
    for line in look_lines(res):
        layout.line(line, markup=False)
    for w in res.warnings:
        layout.line(f"[yellow]warning:[/yellow] {escape(w)}")


def meaning_lines(res: CompareResult) -> list[str]:
    """Beside each claim: how small the gain may be (among claims the observed gain overstates the truth)."""
    return [
        f"{r.candidate}{_subset_label(r)} claims {_n(r.diff_pp)} pp: gain at least {_n(r.lower_bound_pp)} pp (lower CI"
        f" bound; claims overstate gains)"
        for r in res.comparisons
        if r.claim
    ]


def gap_line(gap: Gap) -> str:
    """--split's difference in differences: what memorisation adds over transfer, with its interval."""
    return (
        f"{gap.candidate}: memorisation vs transfer (in-pool gain minus out-of-pool gain) {_n(gap.gap_pp, '{:+.2f}')}"
        f" pp, SE {_n(gap.se_pp, '{:.2f}')}, 95% CI {_ci(gap.ci_pp)} ({gap.in_tasks} in / {gap.out_tasks} out tasks)"
    )


def look_lines(res: CompareResult) -> list[str]:
    """Which family and which look each comparison is, its level, and the verdict of the comparison alone."""
    lk = res.looks
    if lk is None:
        return []
    verdicts = ", ".join(f"{c} {'claim' if v else 'no claim'}" for c, v in lk.unadjusted.items())
    if lk.family is None:
        return [f"the comparison alone (--family none): no family, other looks not accounted for; verdict: {verdicts}"]
    looks = ", ".join(f"{c} look {j} at {100 * lk.level[c]:.2f}%" for c, j in lk.look.items())
    return [
        f"family {lk.family}: {looks} (look j spends alpha/(j(j+1)) of the family's 5%, once and for all);"
        f" the comparison alone: {verdicts}"
    ]


REPO_HEADERS = ["repo", "tasks", "base", "cand", "diff pp", "95% CI", "W/L/T"]


def _repo_cells(r: RepoComparison) -> list[str]:
    return [
        r.repo, str(r.tasks), _n(r.base_pct, "{:.1f}%"), _n(r.cand_pct, "{:.1f}%"),
        _n(r.diff_pp), _ci(r.ci_pp), f"{r.wins}/{r.losses}/{r.ties}",
    ]  # fmt: skip


def markdown_compare(res: CompareResult) -> str:
    several = res.candidates_considered > 1
    head = _headers(res)
    lines = [f"**Baseline:** `{res.baseline}`", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in res.comparisons:
        lines.append("| " + " | ".join(_cells(r, _with_subset(res), res)) + " |")
    lines += [""] + [f"- {_details(r, several)}" for r in res.comparisons]
    lines += ["", f"Claim rule: diff >= {res.min_diff_pp:g} pp and lower CI bound > 0."]
    lines += [f"- {line}" for line in meaning_lines(res)]
    for gap in res.split.gaps if res.split else []:
        lines.append(f"- {gap_line(gap)}")
    for cand, rows in (res.by_repo or {}).items():
        lines += ["", f"**By repo: `{cand}`**", "", "| " + " | ".join(REPO_HEADERS) + " |", "|" + "---|" * 7]
        lines += ["| " + " | ".join(_repo_cells(r)) + " |" for r in rows]
    sens = sensitivity_lines(res)
    if sens:
        lines += ["", sens[0]] + [f"- {line.strip()}" for line in sens[1:]]
    lines += ["", *look_lines(res)] if look_lines(res) else []
    if res.warnings:
        lines += ["", "**Warnings**", ""] + [f"- {w}" for w in res.warnings]
    return "\n".join(lines) + "\n"


def print_plan(res: PowerPlan) -> None:
    if res.answer:
        layout.line(f"[bold]{escape(res.answer)}[/bold]")
    layout.line(f"variance from {res.source.kind}: {res.source.detail}", markup=False)
    v = res.variance
    layout.line(
        f"Var(d_i) per task at K=1: {v.var_d_k1:.4f} = true per-task differences {v.omega2:.4f}"
        f" + sampling {v.sampling_k1:.4f}; at K={res.repeats} sampling is"
        f" {100 * v.sampling_share:.0f}% of Var(d)",
        markup=False,
    )
    layout.table(
        ["K", "95% half-width (pp)", "MDE 80% (pp)", f"tasks for {res.effect_pp:g} pp"],
        [[k + (" *" if int(k) == res.repeats else ""), f"{res.half_width_pp[k]:.2f}", f"{res.mde_pp[k]:.2f}",
          str(res.tasks_needed[k])] for k in res.half_width_pp],
        title=f"{res.tasks} tasks",
    )  # fmt: skip
    layout.line(
        f"at {res.tasks} tasks x K={res.repeats}: power {100 * res.power:.0f}% to detect"
        f" +{res.effect_pp:g} pp (CI excludes 0); {100 * res.claim_power:.0f}% that the claim rule"
        f" (diff >= {res.min_diff_pp:g} and CI lo > 0) fires",
        markup=False,
    )
    for note in res.notes:
        layout.line(f"[yellow]note:[/yellow] {escape(note)}")


def print_prereg_check(res: PreregCheck) -> None:
    short = res.hash.removeprefix("sha256:")[:12]
    layout.line(
        f"plan {res.plan} (hash {short} registered in the ledger {res.registered}): held-out"
        f" {res.holdout_tasks} tasks x {res.holdout_repeats} attempt(s), min diff {res.min_diff_pp:g} pp,"
        f" metric {res.metric}, ungraded trials {res.ungraded.replace('_', ' ')}"
        f" (preregistered); check {res.checks_before + 1} of this plan,"
        f" candidates so far: {', '.join(res.candidates_checked)}",
        markup=False,
    )
    layout.line("[bold]preregistered verdict (held-out tasks only)[/bold]")
    print_compare(res.holdout)
    for r in res.holdout.comparisons:
        verdict = "CLAIM HOLDS" if r.claim else "no claim"
        layout.line(f"[bold]{escape(r.candidate)}: {verdict}[/bold]")
    if res.in_pool:
        layout.line("[dim]secondary, not the preregistered test: train (in-pool) tasks[/dim]")
        print_compare(res.in_pool)

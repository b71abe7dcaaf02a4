"""Human output for `runs` and `show` (the JSON forms are the results' `to_json()`)."""

from __future__ import annotations

from rich.markup import escape

from trialbook.report.layout import line, table
from trialbook.stats.run_summaries import RunListing, RunSummary


def fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def print_runs(rows: list[RunListing]) -> None:
    if not rows:
        line("no runs yet: import some with `trialbook import ...`")
        return
    table(
        ["run", "kind", "created", "tasks", "trials", "judged", "resolved", "rate"],
        [
            [r.name, r.kind, r.created[:16].replace("T", " "), str(r.tasks), str(r.trials),
             f"{r.judged}/{r.trials}", str(r.resolved), fmt_pct(r.resolved_pct)]
            for r in rows
        ],
    )  # fmt: skip


def print_show(s: RunSummary) -> None:
    line(
        f"[bold]{escape(s.name)}[/bold] ({s.kind}, {s.created}): {s.tasks} tasks, {s.trials} trials"
        f" ({s.attempts_per_task or 0} attempts/task max)"
    )
    line(
        f"resolved {s.resolved}/{s.judged} judged = [bold]{fmt_pct(s.resolved_pct)}[/bold]"
        f"   judged {s.judged}/{s.trials}   mean reward {s.mean_reward}"
        + (f"   superseded {s.superseded}" if s.superseded else "")
    )
    sens = s.sensitivity
    if sens:
        line(
            f"{s.trials - s.judged} ungraded trials dropped from the rate; if ungraded trials count as"
            f" failures {fmt_pct(sens.as_failures)}, as successes {fmt_pct(sens.as_successes)}",
            markup=False,
        )
    subsets = s.pass_at_k_tasks or {}
    for key, value in (s.pass_at_k or {}).items():
        k = key[5:]
        n = subsets.get(key)
        attempts = "attempt" if k == "1" else "attempts"
        over = "" if n is None else f" over {n} of {s.graded_tasks} graded tasks (those with >= {k} graded {attempts})"
        line(f"{key} = {value:.1f}%{over}, on resolved attempts", markup=False)
    table(["outcome", "trials"], [[name, str(n)] for name, n in s.outcomes.items()], title="outcomes")
    if s.tags:
        table(["exception / tag", "trials"], [[name, str(n)] for name, n in s.tags.items()], title="tags")
    table(
        ["repo", "trials", "judged", "resolved", "rate"],
        [[repo, str(r.trials), str(r.judged), str(r.resolved), fmt_pct(r.resolved_pct)]
         for repo, r in s.by_repo.items()],
        title="by repo",
    )  # fmt: skip
    if s.stack:
        line("stack: " + ", ".join(f"{k}={v}" for k, v in s.stack.items()), markup=False)

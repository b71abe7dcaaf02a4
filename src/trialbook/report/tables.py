"""Human output: rich tables for the reporting commands (the JSON forms are the dicts themselves)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

console = Console()


def fmt_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def print_runs(rows: list[dict[str, Any]]) -> None:
    if not rows:
        console.print("no runs yet: import some with `trialbook import ...`")
        return
    table = Table("run", "kind", "created", "tasks", "trials", "judged", "resolved", "rate")
    for r in rows:
        table.add_row(
            r["name"], r["kind"], r["created"][:16].replace("T", " "), str(r["tasks"]), str(r["trials"]),
            f"{r['judged']}/{r['trials']}", str(r["resolved"]), fmt_pct(r["resolved_pct"]),
        )  # fmt: skip
    console.print(table)


def print_show(s: dict[str, Any]) -> None:
    console.print(
        f"[bold]{s['name']}[/bold] ({s['kind']}, {s['created']}): {s['tasks']} tasks, {s['trials']} trials"
        f" ({s['attempts_per_task'] or 0} attempts/task max)"
    )
    console.print(
        f"resolved {s['resolved']}/{s['judged']} judged = [bold]{fmt_pct(s['resolved_pct'])}[/bold]"
        f"   judged {s['judged']}/{s['trials']}   mean reward {s['mean_reward']}"
        + (f"   superseded {s['superseded']}" if s["superseded"] else "")
    )
    sens = s.get("sensitivity")
    if sens:
        console.print(
            f"{s['trials'] - s['judged']} ungraded trials dropped from the rate; if ungraded trials count as"
            f" failures {fmt_pct(sens['as_failures'])}, as successes {fmt_pct(sens['as_successes'])}",
            highlight=False,
        )
    for key, value in s.get("pass_at_k", {}).items():
        console.print(f"{key} = {value:.1f}%")
    outcomes = Table("outcome", "trials", title="outcomes")
    for name, n in s["outcomes"].items():
        outcomes.add_row(name, str(n))
    console.print(outcomes)
    if s["tags"]:
        tags = Table("exception / tag", "trials", title="tags")
        for name, n in s["tags"].items():
            tags.add_row(name, str(n))
        console.print(tags)
    repos = Table("repo", "trials", "judged", "resolved", "rate", title="by repo")
    for repo, r in s["by_repo"].items():
        repos.add_row(repo, str(r["trials"]), str(r["judged"]), str(r["resolved"]), fmt_pct(r["resolved_pct"]))
    console.print(repos)
    if s["stack"]:
        console.print("stack: " + ", ".join(f"{k}={v}" for k, v in s["stack"].items()))

"""Human output for `trialbook validate` (the JSON form is the dict itself)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from trialbook.report.tables import console

STYLE = {"ok": "green", "flaky": "yellow", "nop_passes": "yellow"}


def print_validate(r: dict[str, Any]) -> None:
    variants = any("variant" in row for row in r["tasks"])
    columns = ["task", *(["variant"] if variants else []), "verdict", "oracle", "nop", "details"]
    table = Table(
        *columns, title=f"task validation (oracle and nop x{r['repeats']}, timeout x{r['timeout_multiplier']:g})"
    )
    for row in r["tasks"]:
        d = row["details"]
        style = STYLE.get(row["verdict"], "red")
        cells = [row["task_id"], *([row["variant"]] if variants else []), f"[{style}]{row['verdict']}[/{style}]"]
        cells += [
            f"{d['oracle']['resolved']}/{d['oracle']['repeats']}",
            f"{d['nop']['resolved']}/{d['nop']['repeats']}",
        ]
        table.add_row(*cells, escape(d["summary"]))
    console.print(table)
    if variants:
        _print_differences(r)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r["verdicts"].items()))
    console.print(f"verdicts: {counts}")
    n = r["repeats"]
    runs = ", ".join(r["runs"].values())
    console.print(f"ledger run(s), kind validate: {runs} (oracle = attempts 0..{n - 1}, nop = {n}..{2 * n - 1})")


def _print_differences(r: dict[str, Any]) -> None:
    rows = r["variant_differences"]
    labels = list(r["runs"])
    if not rows:
        console.print(f"per-test statuses: no difference between {', '.join(labels)}")
        return
    table = Table("task", "agent", "test", *labels, title="per-test status differences between image variants")
    for d in rows:
        table.add_row(d["task_id"], d["agent"], escape(d["test"]), *(d["statuses"][label] for label in labels))
    console.print(table)

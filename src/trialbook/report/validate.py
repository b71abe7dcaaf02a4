"""Human output for `trialbook validate` (JSON: the result's `to_json()`)."""

from __future__ import annotations

from trialbook.harness.workflows.validate import ValidateResult
from trialbook.report.layout import line, table


def print_validate(r: ValidateResult) -> None:
    variants = any(row.variant is not None for row in r.tasks)
    columns = ["task", *(["variant"] if variants else []), "verdict", "oracle", "nop", "details"]
    rows = []
    for row in r.tasks:
        oracle, nop = row.agents["oracle"], row.agents["nop"]
        rows.append([
            row.task_id, *([row.variant or ""] if variants else []), row.verdict,
            f"{oracle.resolved}/{oracle.repeats}", f"{nop.resolved}/{nop.repeats}", row.summary,
        ])  # fmt: skip
    table(columns, rows, title=f"task validation (oracle and nop x{r.repeats}, timeout x{r.timeout_multiplier:g})")
    if variants:
        _print_differences(r)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.verdicts.items()))
    line(f"verdicts: {counts}", markup=False)
    n = r.repeats
    runs = ", ".join(r.runs.values())
    line(f"ledger run(s), kind validate: {runs} (oracle = attempts 0..{n - 1}, nop = {n}..{2 * n - 1})", markup=False)


def _print_differences(r: ValidateResult) -> None:
    rows = r.variant_differences
    labels = list(r.runs)
    if not rows:
        line(f"per-test statuses: no difference between {', '.join(labels)}", markup=False)
        return
    table(
        ["task", "agent", "test", *labels],
        [[d.task_id, d.agent, d.test, *(d.statuses[label] for label in labels)] for d in rows],
        title="per-test status differences between image variants",
    )

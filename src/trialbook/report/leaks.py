"""Human output for `trialbook tasks scan-leaks` (JSON: the result's `to_json()`): one row per task, then its hits."""

from __future__ import annotations

from trialbook.report.layout import line, table
from trialbook.verify.leaks import LeakScan


def print_leaks(r: LeakScan) -> None:
    rows = [[t.task_id, t.verdict, f"{len(t.hits)}", f"{t.lines}", f"{t.seconds:.1f}", t.summary] for t in r.tasks]
    table(["task", "verdict", "hits", "lines", "scan s", "details"], rows, title="the solution in the agent's image")
    for t in r.tasks:
        for hit in t.hits:
            line(f"{t.task_id}: {hit.kind}: {hit.where} ({hit.lines}/{t.lines} lines)", markup=False)
        for note in t.notes:
            line(f"{t.task_id}: note: {note}", markup=False)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.verdicts.items()))
    line(f"verdicts: {counts}", markup=False)

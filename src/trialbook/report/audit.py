"""Human output for regrade, audit, attribute and tasks from-swebench (JSON: the results' `to_json()`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from trialbook.audit.attribute import Attribution
from trialbook.audit.failures import AuditResult
from trialbook.audit.regrade import RegradeResult
from trialbook.report.layout import line, table

if TYPE_CHECKING:  # the modules import swebench (seconds): only `tasks from-swebench` loads them
    from trialbook.tasks.swebench.build import TasksBuilt
    from trialbook.tasks.swebench.generate import TasksWritten

TOP = 15  # rows shown in long per-test tables (the JSON has them all)


def _pct(k: int, n: int) -> str:
    return f"{k}/{n}" + (f" ({100 * k / n:.1f}%)" if n else "")


def print_regrade(r: RegradeResult) -> None:
    line(
        f"[bold]{escape(r.run)}[/bold]: re-graded {r.regraded} of {r.trials} trials from their verifier logs"
        f" (no log {r.no_log}, no F2P/P2P lists {r.no_test_lists}, ungraded {r.ungraded_with_log})"
    )
    line(f"agree with the recorded grade: [bold]{_pct(r.agree, r.regraded)}[/bold]")
    if r.agree_but_tests_differ:
        line(f"same verdict but per-test statuses differ in {r.agree_but_tests_differ} trials")
    if not r.disagreements:
        return
    rows = []
    for d in r.disagreements:
        tests = ", ".join(f"{t.test} ({t.recorded}->{t.regraded})" for t in d.tests[:3])
        more = len(d.tests) - 3
        rows.append([d.task_id, str(d.attempt), d.recorded, d.regraded,
                     tests + (f" +{more}" if more > 0 else "")])  # fmt: skip
    table(["task", "attempt", "recorded", "regraded", "tests that differ"], rows, title="disagreements")


def print_audit(a: AuditResult) -> None:
    if a.status == "no_verifier_logs":
        line(f"{escape(a.run)}: {a.trials} trials, no verifier logs: nothing audited")
        return
    pen = a.p2p_penalties
    line(
        f"[bold]{escape(a.run)}[/bold]: {a.trials} trials, {a.graded} graded, {a.with_log} with a"
        f" verifier log ({a.regraded_from_log} re-graded from it)"
    )
    line(f"P2P penalties (F2P all pass, some P2P fail): {_pct(pen.count, a.graded)}")
    if pen.by_repo:
        table(["repo", "P2P penalties"], [[k, str(n)] for k, n in pen.by_repo.items()], title="P2P penalties by repo")
    if pen.by_test:
        table(
            ["task", "test", "trials"], [[x.task_id, x.test, str(x.trials)] for x in pen.by_test[:TOP]],
            title=f"P2P tests failed in penalties (top {TOP})",
        )  # fmt: skip
    rows = []
    for name, sig in a.by_signature.items():
        share = sig.share_of_p2p_penalties
        of_resolved = sig.share_of_resolved
        rows.append([name, "yes" if sig.artifact else "no", str(sig.trials), str(sig.unresolved),
                     f"{sig.resolved}" + (f" ({100 * of_resolved:.1f}%)" if of_resolved else ""),
                     f"{sig.p2p_penalties}" + (f" ({100 * share:.1f}%)" if share else "")])  # fmt: skip
    table(["signature", "artifact", "trials", "unresolved", "resolved", "P2P penalties"], rows, title="log signatures")
    for name, sig in a.by_signature.items():
        if sig.trials:
            line(f"  [bold]{name}[/bold]: {escape(sig.meaning)}")
    if a.suspect_tests:
        table(
            ["test", "task(s)", "failed", "reason"],
            [[s.test, s.task_id or ", ".join((s.tasks or [])[:3]), f"{s.failed}/{s.trials}", s.reason]
             for s in a.suspect_tests[:TOP]],
            title=f"suspect tests (top {TOP})",
        )  # fmt: skip
    ex = a.explained_by_artifacts
    line(f"unresolved trials showing a known artifact: {_pct(ex.unresolved, ex.of_unresolved)}")
    line(f"[bold]P2P penalties explained by known artifacts: {_pct(ex.p2p_penalties, ex.of_p2p_penalties)}[/bold]")


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def print_attribute(r: Attribution) -> None:
    line(
        f"[bold]{escape(r.old)}[/bold] {r.old_pct:.2f}% -> [bold]{escape(r.new)}[/bold] {r.new_pct:.2f}%"
        f" over {r.pairs} paired trials (unpaired: {r.unpaired_old} old, {r.unpaired_new} new)"
    )
    rows = [[p.from_, p.to, p.via or "", str(p.tasks), f"{p.net:+d}", _signed(p.pp)] for p in r.parts]
    rows.append(["unchanged", "", "", str(r.unchanged), "+0", "+0.00"])
    table(["from", "to", "via", "trials", "net resolved", "points"], rows, title="change by transition")
    table(
        ["repo", "trials", "net resolved", "points"],
        [[repo, str(v.tasks), f"{v.net:+d}", _signed(v.pp)] for repo, v in r.by_repo.items() if v.net or v.pp],
        title="change by repo",
    )
    terms = " ".join(
        f"{'+' if p.pp >= 0 else '-'} {abs(p.pp):.2f} {p.from_}->{p.to}" + (f" ({p.via})" if p.via else "")
        for p in r.parts
        if p.pp
    )
    line(f"[bold]total {_signed(r.total_pp)} pp[/bold] = {escape(terms.lstrip('+ ') or '0')}")


def print_from_swebench(r: TasksWritten) -> None:
    line(f"wrote {len(r.written)} task folders to {r.out}", markup=False)
    if r.skipped:
        table(["instance", "reason"], [[s.task_id, s.reason] for s in r.skipped],
              title=f"skipped ({len(r.skipped)})")  # fmt: skip


def print_build(r: TasksBuilt) -> None:
    """`tasks from-swebench --build`: the folders written, what was not built and why, the images built."""
    line(f"built and wrote {len(r.written)} task folders to {r.out}", markup=False)
    for s in r.skipped:
        line(f"{s.status}: {s.task_id}: {s.reason}", markup=False)
    built = [x for x in r.instances if x.status == "built"]
    if built:
        table(["instance", "image", "build s", "image MB", "lock"],
              [[x.task_id, str(x.official_image or x.image), f"{x.seconds:.0f}", f"{x.image_mb:.0f}", str(x.lock)]
               for x in built], title="built")  # fmt: skip
    for x in built:
        if x.lock_changes:
            line(f"{x.task_id}: rebuilt image is a variant of {x.locked_image}: {'; '.join(x.lock_changes)}",
                 markup=False)  # fmt: skip

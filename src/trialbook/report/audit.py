"""Human output for regrade, audit, attribute and tasks from-swebench (JSON forms are the dicts)."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from trialbook.report.tables import console

TOP = 15  # rows shown in long per-test tables (the JSON has them all)


def _pct(k: int, n: int) -> str:
    return f"{k}/{n}" + (f" ({100 * k / n:.1f}%)" if n else "")


def print_regrade(r: dict[str, Any]) -> None:
    console.print(
        f"[bold]{r['run']}[/bold]: re-graded {r['regraded']} of {r['trials']} trials from their verifier logs"
        f" (no log {r['no_log']}, no F2P/P2P lists {r['no_test_lists']}, ungraded {r['ungraded_with_log']})"
    )
    console.print(f"agree with the recorded grade: [bold]{_pct(r['agree'], r['regraded'])}[/bold]")
    if r["agree_but_tests_differ"]:
        console.print(f"same verdict but per-test statuses differ in {r['agree_but_tests_differ']} trials")
    if not r["disagreements"]:
        return
    table = Table("task", "attempt", "recorded", "regraded", "tests that differ", title="disagreements")
    for d in r["disagreements"]:
        tests = ", ".join(escape(f"{t['test']} ({t['recorded']}->{t['regraded']})") for t in d["tests"][:3])
        more = len(d["tests"]) - 3
        table.add_row(
            d["task_id"], str(d["attempt"]), d["recorded"], d["regraded"], tests + (f" +{more}" if more > 0 else "")
        )
    console.print(table)


def print_audit(a: dict[str, Any]) -> None:
    pen = a["p2p_penalties"]
    console.print(
        f"[bold]{a['run']}[/bold]: {a['trials']} trials, {a['graded']} graded, {a['with_log']} with a verifier log"
        f" ({a['regraded_from_log']} re-graded from it)"
    )
    console.print(f"P2P penalties (F2P all pass, some P2P fail): {_pct(pen['count'], a['graded'])}")
    if pen["by_repo"]:
        repos = Table("repo", "P2P penalties", title="P2P penalties by repo")
        for repo, n in pen["by_repo"].items():
            repos.add_row(repo, str(n))
        console.print(repos)
    if pen["by_test"]:
        tests = Table("task", "test", "trials", title=f"P2P tests failed in penalties (top {TOP})")
        for row in pen["by_test"][:TOP]:
            tests.add_row(row["task_id"], escape(row["test"]), str(row["trials"]))
        console.print(tests)
    sigs = Table("signature", "artifact", "trials", "unresolved", "resolved", "P2P penalties", title="log signatures")
    for name, sig in a["by_signature"].items():
        share = sig["share_of_p2p_penalties"]
        of_resolved = sig.get("share_of_resolved")
        sigs.add_row(
            name,
            "yes" if sig["artifact"] else "no",
            str(sig["trials"]),
            str(sig["unresolved"]),
            f"{sig.get('resolved', 0)}" + (f" ({100 * of_resolved:.1f}%)" if of_resolved else ""),
            f"{sig['p2p_penalties']}" + (f" ({100 * share:.1f}%)" if share else ""),
        )
    console.print(sigs)
    for name, sig in a["by_signature"].items():
        if sig["trials"]:
            console.print(f"  [bold]{name}[/bold]: {escape(sig['meaning'])}")
    if a["suspect_tests"]:
        sus = Table("test", "task(s)", "failed", "reason", title=f"suspect tests (top {TOP})")
        for s in a["suspect_tests"][:TOP]:
            where = s.get("task_id") or ", ".join(s.get("tasks", [])[:3])
            sus.add_row(escape(s["test"]), where, f"{s['failed']}/{s['trials']}", s["reason"])
        console.print(sus)
    ex = a["explained_by_artifacts"]
    console.print(f"unresolved trials showing a known artifact: {_pct(ex['unresolved'], ex['of_unresolved'])}")
    console.print(
        f"[bold]P2P penalties explained by known artifacts: {_pct(ex['p2p_penalties'], ex['of_p2p_penalties'])}[/bold]"
    )


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def print_attribute(r: dict[str, Any]) -> None:
    console.print(
        f"[bold]{r['old']}[/bold] {r['old_pct']:.2f}% -> [bold]{r['new']}[/bold] {r['new_pct']:.2f}%"
        f" over {r['pairs']} paired trials (unpaired: {r['unpaired_old']} old, {r['unpaired_new']} new)"
    )
    parts = Table("from", "to", "via", "trials", "net resolved", "points", title="change by transition")
    for p in r["parts"]:
        parts.add_row(p["from"], p["to"], p["via"] or "", str(p["tasks"]), f"{p['net']:+d}", _signed(p["pp"]))
    parts.add_row("[dim]unchanged[/dim]", "", "", str(r["unchanged"]), "+0", "+0.00")
    console.print(parts)
    repos = Table("repo", "trials", "net resolved", "points", title="change by repo")
    for repo, v in r["by_repo"].items():
        if v["net"] or v["pp"]:
            repos.add_row(repo, str(v["tasks"]), f"{v['net']:+d}", _signed(v["pp"]))
    console.print(repos)
    terms = " ".join(
        f"{'+' if p['pp'] >= 0 else '-'} {abs(p['pp']):.2f} {p['from']}->{p['to']}"
        + (f" ({p['via']})" if p["via"] else "")
        for p in r["parts"]
        if p["pp"]
    )
    console.print(f"[bold]total {_signed(r['total_pp'])} pp[/bold] = {terms.lstrip('+ ') or '0'}")


def print_from_swebench(r: dict[str, Any]) -> None:
    console.print(f"wrote {len(r['written'])} task folders to {r['out']}")
    if r["skipped"]:
        table = Table("instance", "reason", title=f"skipped ({len(r['skipped'])})")
        for s in r["skipped"]:
            table.add_row(s["task_id"], s["reason"])
        console.print(table)

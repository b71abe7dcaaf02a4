"""What each page shows, as template contexts. The numbers come from the computation modules
(stats.compare, training report, audit) and ledger.views; this module only arranges them."""

from __future__ import annotations

import re
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from trialbook.errors import UserError
from trialbook.extra_schema import CanaryNote, read_extra
from trialbook.ledger import views
from trialbook.ledger.store import Ledger
from trialbook.web import plots
from trialbook.web.text import clean_text, trajectory_turns

PAGE = 50
TRAJECTORY_NAMES = ("trajectory.json", "trajectory.jsonl", "agent/trajectory.json")
SHARE_LABELS = {
    "agent_timeout": "CBF",
    "p2p_regression": "P2P",
    "format_error": "format",
    "context_overflow": "context",
}


class RunCache:
    """A run's counts, kept until the run gains a trial (views.run_version). Counting reads only a
    stored summary (ledger/summary_cache.py) or, when that is stale, one grouped pass over the run; the
    cache saves even that on the next visits."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[Any, Any] = {}

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = value

    def peek(self, key: Any) -> Any:
        with self._lock:
            return self._items.get(key)

    def get(self, key: Any, compute: Any) -> Any:
        with self._lock:
            if key in self._items:
                return self._items[key]
        value = compute()
        with self._lock:
            self._items[key] = value
        return value


def _counts(ledger: Ledger, cache: RunCache, run_ids: list[int]) -> dict[int, views.TrialCounts]:
    """Counts of a page of runs: the cached ones, the rest from one grouped query."""
    keys = {rid: ("counts", *views.run_version(ledger, rid)) for rid in run_ids}
    out = {rid: cache.peek(key) for rid, key in keys.items()}
    missing = [rid for rid, c in out.items() if c is None]
    for rid, counts in views.run_counts(ledger, missing).items():
        cache.put(keys[rid], counts)
        out[rid] = counts
    return out


def _overview(ledger: Ledger, cache: RunCache, run: views.RunHeader) -> views.RunOverview:
    version = views.run_version(ledger, run.id)
    overview: views.RunOverview = cache.get(("overview", *version), lambda: views.run_overview(ledger, run.name))
    cache.put(("counts", *version), overview.counts)  # the runs page's counts come with it: no second scan
    return overview


def preload() -> None:
    """What the first visit of each page would otherwise pay for: the templates compiled, the
    computation modules imported. The server calls it once at start-up."""
    from trialbook.audit import failures as audit  # noqa: F401
    from trialbook.report import training as _report_training  # noqa: F401
    from trialbook.stats import compare, scores  # noqa: F401
    from trialbook.training import analysis, ingest, stalls  # noqa: F401
    from trialbook.web.render import ENV

    for name in ENV.list_templates():
        ENV.get_template(name)


def runs_page(ledger: Ledger, cache: RunCache, kind: str | None, name: str | None, after: int) -> dict[str, Any]:
    rows, more = views.list_runs(ledger, kind or None, name or None, after, PAGE)
    counts = _counts(ledger, cache, [r.id for r in rows])
    return {
        "rows": rows, "counts": counts, "kinds": views.run_kinds(ledger), "kind": kind or "", "name": name or "",
        "next_after": rows[-1].id if more and rows else None, "after": after,
    }  # fmt: skip


def run_page(ledger: Ledger, cache: RunCache, name: str, outcome: str | None, task: str | None,
             after: int) -> dict[str, Any]:  # fmt: skip
    run = views.run_by_name(ledger, name)
    overview = _overview(ledger, cache, run)
    rows, more = views.paged_trials(ledger, run.id, outcome or None, task or None, after, PAGE)
    others = [r.name for r in views.list_runs(ledger, limit=500)[0] if r.name != name]
    return {
        "o": overview, "rows": rows, "outcome": outcome or "", "task": task or "", "after": after,
        "next_after": rows[-1].id if more and rows else None, "others": others,
    }  # fmt: skip


def trial_page(ledger: Ledger, trial_id: int) -> dict[str, Any]:
    d = views.trial_detail(ledger, trial_id)
    files = views.artifact_tails(ledger, trial_id)
    turns = None
    for n in TRAJECTORY_NAMES:
        if n in files:
            raw = files[n].text if not files[n].cut else ledger.artifact(trial_id, n) or ""
            turns = trajectory_turns(raw)
            break
    tests = []
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        statuses = (d.tests or {}).get(kind) or {}
        listed = (d.fail_to_pass if kind == "FAIL_TO_PASS" else d.pass_to_pass) or []
        for test in sorted(set(statuses) | set(listed)):
            status = statuses.get(test, "not run")
            tests.append({"kind": kind, "test": test, "status": status, "verdict": status_verdict(status)})
    tests.sort(key=lambda r: VERDICT_ORDER[r["verdict"]])  # failures first, then the rest in their order
    verifier = next((files[n].text for n in ("verifier.log", "test_output.txt") if n in files), None)
    return {
        "d": d,
        "turns": turns,
        "tests": tests,
        "failing": sum(1 for r in tests if r["verdict"] == "fail"),
        "canary": canary_note(read_extra(d).canary),
        "verifier": clean_text(verifier) if verifier is not None else None,
        "files": {n: (clean_text(a.text), a.size, a.cut) for n, a in files.items()},
        "extra": clean_text(str(d.extra)) if d.extra else None,
        "message": clean_text(d.exception_message),
    }


# a test's status on the trial page: red (did not pass), green (passed), grey (not run / unknown)
FAIL_STATUSES = frozenset(("fail", "failed", "error", "missing"))
PASS_STATUSES = frozenset(("pass", "passed", "xfail"))
VERDICT_ORDER = {"fail": 0, "other": 1, "pass": 2}


def status_verdict(status: str) -> str:
    s = status.lower()
    return "fail" if s in FAIL_STATUSES else "pass" if s in PASS_STATUSES else "other"


def canary_note(canary: CanaryNote | None) -> dict[str, str] | None:
    """What the verifier's canary (verify/canary.py) says about this trial, in words: its FAILED line in the log
    is the expected reading, not a failure of the agent's change."""
    from trialbook.verify import canary as c

    if canary is None or not canary["name"]:
        return None
    seen = canary["seen"] or ""
    words = {
        c.FAILED: "reported failing, as it must: the test runner reports truthfully. Its FAILED line in the verifier"
        " log is expected and does not count against the agent's change.",
        c.PASSED: "reported passing: the runner was made to pass what fails (by the code under test or a forcing"
        " plugin), so the trial is graded as failing (runner_subverted).",
        c.HIDDEN: "not reported with the change, reported failing without it: the change hid it, so the trial is"
        " graded as failing (runner_subverted).",
        c.MISSING: "not reported, with or without the change: the runner's own settings do not collect it; the grade"
        " stands (canary_missing).",
        c.SKIPPED: "skipped, with or without the change: the grade stands (canary_missing).",
    }
    return {"name": canary["name"], "seen": seen, "ok": "yes" if seen == c.FAILED else "no",
            "text": words.get(seen, f"read as {seen!r}.")}  # fmt: skip


def compare_page(
    ledger: Ledger, base: str, cands: list[str], min_diff: float, by_repo: bool, split_run: str | None = None,
    metric: str = "resolved", exclude_repos_: list[str] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """The comparison, plus per-task wins and losses; `split_run`: in/out rows over that run's tasks; `metric` and
    `exclude_repos` as `compare --metric` / `--exclude-repo` (the per-task lists follow both)."""
    from trialbook.stats import looks
    from trialbook.stats.compare import CompareRequest, align, compare, exclude_repos
    from trialbook.stats.scores import check_metric, load_scores

    metric = check_metric(metric)
    scores = {n: load_scores(ledger, n) for n in (base, *cands)}
    with tempfile.TemporaryDirectory() as tmp:
        split = None
        if split_run:
            split = Path(tmp) / f"tasks-of-{re.sub(r'[^A-Za-z0-9._-]', '_', split_run)}.txt"
            split.write_text("\n".join(views.task_ids_of(ledger, views.run_by_name(ledger, split_run).id)) + "\n")

        def run(shares: dict[str, float] | None) -> Any:
            asked = CompareRequest(base, cands, exclude=exclude_repos_ or [], split=split, min_diff=min_diff,
                                   by_repo=by_repo, metric=metric, shares=shares)  # fmt: skip
            return compare(ledger, asked, runs=scores)

        # the same numbers as `compare` (its family's looks, stats/looks.py); the page records no look
        res = looks.apply(ledger, run(None), None, run, source="web", record=False)
    kept, _ = exclude_repos([scores[n].with_metric(metric) for n in (base, *cands)], exclude_repos_ or [])
    per_task = {}
    for cand, c in zip(cands, kept[1:], strict=True):
        b = kept[0]
        ids, ib, ic, _ = align(b, c)
        d = c.score[ic] - b.score[ib]
        order = np.argsort(-np.abs(d), kind="stable")
        per_task[cand] = {
            "wins": [(str(ids[i]), float(d[i])) for i in order if d[i] > 0],
            "losses": [(str(ids[i]), float(d[i])) for i in order if d[i] < 0],
        }
    return {"res": res, "forest": plots.forest(res), "per_task": per_task, "base": base, "cands": cands}


def training_page(ledger: Ledger, name: str, bucket: int) -> dict[str, Any]:
    from trialbook.report.training import summary_paragraph
    from trialbook.training.analysis import train_report
    from trialbook.training.ingest import load_steps
    from trialbook.training.stalls import step_waits

    report = train_report(ledger, name, bucket=bucket)
    waits = step_waits(load_steps(ledger, ledger.get_run(name).id))
    st = report.stalls
    return {
        "r": report,
        "pass_plot": plots.pass_rate(report),
        "share_plot": plots.outcome_shares(report, SHARE_LABELS),
        "enc_plot": plots.encounters(report) if report.encounters else None,
        "step_plot": plots.step_timing(waits, st.slow_steps, st.median_step_s) if waits else None,
        "labels": SHARE_LABELS,
        "summary": summary_paragraph(report),
    }


def audit_page(ledger: Ledger, name: str) -> dict[str, Any]:
    from trialbook.audit.failures import audit_run

    a = audit_run(ledger, name, jobs=1, per_trial=False)
    return {"a": a, "sig_plot": plots.signature_plot(a)}


def parse_after(value: str | None) -> int:
    try:
        return max(0, int(value or 0))
    except ValueError:
        raise UserError(f"'after' must be a trial or run id, not {value!r}") from None

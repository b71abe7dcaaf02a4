"""`trialbook report --html FILE`: the compare, training and audit views in one self-contained HTML file.

The same templates and plots as `trialbook serve`, with inline CSS and SVG and no links back to a
server, so the file opens anywhere without a network (attach it to a PR or a paper).
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.web import pages, plots
from trialbook.web.render import render


def compare_section(ledger: Ledger, base: str, cands: list[str], split: Path | None, min_diff: float, by_repo: bool,
                    metric: str = "resolved", exclude: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    from trialbook.stats import looks
    from trialbook.stats.compare import CompareRequest, compare

    def run(shares: dict[str, float] | None) -> Any:
        asked = CompareRequest(base, cands, exclude=exclude or [], split=split, min_diff=min_diff, by_repo=by_repo,
                               metric=metric, shares=shares)  # fmt: skip
        return compare(ledger, asked)

    res = looks.apply(ledger, run(None), None, run, source="report", record=False)  # as `compare` prints it
    return {"kind": "compare", "heading": f"Compare: {', '.join(cands)} vs {base}",
            "ctx": {"res": res, "forest": plots.forest(res), "per_task": None}}  # fmt: skip


def training_section(ledger: Ledger, run: str, bucket: int) -> dict[str, Any]:
    return {"kind": "training", "heading": f"Training: {run}", "ctx": pages.training_page(ledger, run, bucket)}


def audit_section(ledger: Ledger, run: str) -> dict[str, Any]:
    return {"kind": "audit", "heading": f"Audit: {run}", "ctx": pages.audit_page(ledger, run)}


def write_html(out: Path, sections: list[dict[str, Any]], title: str) -> int:
    if not sections:
        raise UserError("nothing to report: give --compare, --train-run and/or --audit")
    try:
        v = version("trialbook")
    except PackageNotFoundError:
        v = "dev"
    text = render("report.html", offline=True, title=title, sections=sections, version=v,
                  generated=datetime.now(UTC).isoformat(timespec="seconds"))  # fmt: skip
    try:
        out.write_text(text)
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror}") from None
    return len(text)

"""`trialbook serve` (a read-only local web view of the ledger) and `trialbook report --html`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from trialbook.cli.common import Db, app, comma_list, done, finite
from trialbook.cli.groups import Group, grouped
from trialbook.errors import UserError


def _need_extra(what: str) -> None:
    from trialbook.extras import require

    require("web", what)


@app.command("serve")
def serve_cmd(
    db: Db = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind; only this machine by default.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port (0: any free port).")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help="env:VAR or file:PATH: the token every request must carry (Authorization: Bearer; a browser "
            "opens /?token=... once); needed for a non-loopback --host [env TRIALBOOK_TOKEN].",
        ),
    ] = None,  # fmt: skip
) -> None:
    """A read-only web view of the ledger: runs, trials, compare, training, audit."""
    from trialbook.access import server_token

    secret = server_token(token, host, "serve")
    _need_extra("trialbook serve")
    import socket

    import uvicorn

    from trialbook.ledger.views import open_readonly
    from trialbook.web.app import create_app

    ledger = open_readonly(db)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)  # connections made from here on wait in the backlog until uvicorn accepts them
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    bound = sock.getsockname()[1]
    from sqlalchemy.engine import make_url

    shown = make_url(ledger.url).render_as_string(hide_password=True)
    done(f"serving {shown} (read-only) on http://{host}:{bound}/  (Ctrl-C stops)")
    if secret is not None:
        done("every request needs the token (Authorization: Bearer, or open /?token=... once in a browser)")
    config = uvicorn.Config(create_app(ledger, secret), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])


@dataclass
class ReportSections:
    """The sections of the HTML report: a comparison (and how it is made), a training run, an audit."""

    compare: Annotated[
        str | None, typer.Option("--compare", help="BASE,CAND[,CAND...]: a paired comparison section.")
    ] = None
    split: Annotated[Path | None, typer.Option("--split", help="Task list: in/out rows in the comparison.")] = None
    min_diff: Annotated[
        float, typer.Option("--min-diff", help="Smallest gain (pp) worth claiming.", callback=finite)
    ] = 4.0
    by_repo: Annotated[bool, typer.Option("--by-repo", help="Per-repo tables in the comparison.")] = False
    metric: Annotated[
        str, typer.Option("--metric", help="resolved, or reward: mean reward (partial rewards count).")
    ] = "resolved"
    exclude_repo: Annotated[
        list[str] | None, typer.Option("--exclude-repo", help="Drop a repo's tasks from the comparison (repeatable).")
    ] = None
    train: Annotated[str | None, typer.Option("--train-run", help="A training run: the training section.")] = None
    bucket: Annotated[int, typer.Option("--bucket", help="Weight versions per bucket.")] = 5
    audit: Annotated[str | None, typer.Option("--audit", help="A run to audit: the signatures section.")] = None


@app.command("report")
@grouped(what=Group(ReportSections))
def report_cmd(
    html: Annotated[Path, typer.Option("--html", help="The HTML file to write (self-contained, works offline).")],
    what: ReportSections,
    title: Annotated[str, typer.Option("--title", help="Title of the report.")] = "trialbook report",
    db: Db = None,
) -> None:
    """One self-contained HTML file with the compare, training and audit views (plots included)."""
    _need_extra("trialbook report --html")
    from trialbook.ledger.views import open_readonly
    from trialbook.web import standalone

    ledger = open_readonly(db)
    sections = []
    if what.compare:
        names = comma_list(what.compare) or []
        if len(names) < 2:
            raise UserError("--compare takes BASE,CAND[,CAND...]: a baseline and at least one candidate")
        sections.append(
            standalone.compare_section(
                ledger,
                names[0],
                names[1:],
                what.split,
                what.min_diff,
                what.by_repo,
                what.metric,
                what.exclude_repo or [],
            )
        )
    if what.train:
        sections.append(standalone.training_section(ledger, what.train, what.bucket))
    if what.audit:
        sections.append(standalone.audit_section(ledger, what.audit))
    size = standalone.write_html(html, sections, title)
    done(f"wrote {html} ({size / 1024:.0f} KiB, {len(sections)} section(s))")

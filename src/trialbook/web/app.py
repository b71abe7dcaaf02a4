"""`trialbook serve`: a read-only Starlette app over the ledger.

Handlers are plain (sync) functions: Starlette runs them in its thread pool, so a slow page (a
compare over big runs) does not block the others. Bad input (an unknown run, a bad parameter) is a
4xx page with one line, never a traceback.
"""

from __future__ import annotations

import threading
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from trialbook.errors import UserError
from trialbook.ledger import views
from trialbook.ledger.store import Ledger
from trialbook.web import pages
from trialbook.web.render import render

SECURITY_HEADERS = {
    # every byte of the page is ours (inline CSS and SVG, no script): nothing else may load or run
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _page(template: str, status: int = 200, **ctx: Any) -> HTMLResponse:
    return HTMLResponse(render(template, **ctx), status_code=status, headers=SECURITY_HEADERS)


def _error(exc: Exception, status: int) -> HTMLResponse:
    return _page("error.html", status, code=status, message=str(exc))


def create_app(ledger: Ledger, warm: bool = True) -> Starlette:
    """The app; `warm` fills the cache for the first page of runs in the background, so even the first
    visit to a million-trial run does not wait for its full scan."""
    cache = pages.RunCache()
    if warm:
        threading.Thread(target=pages.warm, args=(ledger, cache), name="trialbook-warm", daemon=True).start()

    def guarded(fn: Any) -> Any:
        def handler(request: Request) -> Response:
            try:
                return fn(request)
            except UserError as exc:
                return _error(exc, 404 if str(exc).startswith("no ") else 400)

        return handler

    def runs(request: Request) -> Response:
        q = request.query_params
        ctx = pages.runs_page(ledger, cache, q.get("kind"), q.get("name"), pages.parse_after(q.get("after")))
        return _page("runs.html", **ctx)

    def run(request: Request) -> Response:
        q = request.query_params
        ctx = pages.run_page(
            ledger,
            cache,
            request.path_params["name"],
            q.get("outcome"),
            q.get("task"),
            pages.parse_after(q.get("after")),
        )
        return _page("run.html", **ctx)

    def trial(request: Request) -> Response:
        return _page("trial.html", **pages.trial_page(ledger, request.path_params["trial_id"]))

    def task(request: Request) -> Response:
        q = request.query_params
        run_ = views.run_by_name(ledger, q.get("run", ""))
        trial_id = views.latest_trial_id(ledger, run_.id, q.get("task", ""))
        if trial_id is None:
            raise UserError(f"no current trial of task {q.get('task')!r} in run '{run_.name}'")
        return RedirectResponse(f"/trials/{trial_id}", status_code=303)

    def compare(request: Request) -> Response:
        q = request.query_params
        names = [r.name for r in views.list_runs(ledger, limit=1000)[0]]
        base, cands = q.get("base", ""), [c for c in q.getlist("cand") if c]
        try:
            min_diff = float(q.get("min_diff") or 4.0)
        except ValueError:
            raise UserError(f"min_diff must be a number of points, not {q.get('min_diff')!r}") from None
        ctx: dict[str, Any] = {"names": names, "base": base, "cands": cands, "min_diff": min_diff,
                               "by_repo": bool(q.get("by_repo")), "split": q.get("split") or "",
                               "res": None, "error": None}  # fmt: skip
        if base and cands:
            try:
                ctx.update(pages.compare_page(ledger, base, cands, min_diff, ctx["by_repo"], ctx["split"] or None))
            except UserError as exc:  # shown above the form, which stays usable
                ctx["error"] = str(exc)
        return _page("compare.html", **ctx)

    def training(request: Request) -> Response:
        q = request.query_params
        try:
            bucket = int(q.get("bucket") or 5)
        except ValueError:
            raise UserError(f"bucket must be a whole number, not {q.get('bucket')!r}") from None
        name = q.get("run", "")
        key = ("training", bucket, *views.run_version(ledger, views.run_by_name(ledger, name).id))
        return _page("training.html", **cache.get(key, lambda: pages.training_page(ledger, name, bucket)))

    def audit(request: Request) -> Response:
        name = request.query_params.get("run", "")
        key = ("audit", *views.run_version(ledger, views.run_by_name(ledger, name).id))
        return _page("audit.html", **cache.get(key, lambda: pages.audit_page(ledger, name)))

    routes = [
        Route("/", guarded(runs)),
        Route("/runs/{name:path}", guarded(run)),
        Route("/trials/{trial_id:int}", guarded(trial)),
        Route("/task", guarded(task)),
        Route("/compare", guarded(compare)),
        Route("/training", guarded(training)),
        Route("/audit", guarded(audit)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(Exception(f"no page at {request.url.path}"), 404)

    return Starlette(routes=routes, exception_handlers={404: not_found})

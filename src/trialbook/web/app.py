"""`trialbook serve`: a read-only Starlette app over the ledger.

Handlers are plain (sync) functions: Starlette runs them in its thread pool, so a slow page (a
compare over big runs) does not block the others. Bad input (an unknown run, a bad parameter) is a
4xx page with one line, never a traceback.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from trialbook.access import bearer_ok
from trialbook.errors import UserError
from trialbook.ledger import looks as ledger_looks
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


# the live training page alone runs a script: ours, from this server, fetching from this server
LIVE_HEADERS = {
    **SECURITY_HEADERS,
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self';"
    " script-src 'self'; connect-src 'self'",
}
STATIC = Path(__file__).with_name("static")
LIVE_INTERVAL_S = 2.0


def _page(template: str, status: int = 200, headers: dict[str, str] | None = None, **ctx: Any) -> HTMLResponse:
    return HTMLResponse(render(template, **ctx), status_code=status, headers=headers or SECURITY_HEADERS)


def _error(exc: Exception, status: int) -> HTMLResponse:
    return _page("error.html", status, code=status, message=str(exc))


TOKEN_COOKIE = "trialbook_token"


def _refused(request: Request, token: str | None) -> Response | None:
    """With a token (access.py), a request without it is 401; a browser opens `/?token=TOKEN` once and gets the
    token as a cookie (HttpOnly, this site only), then the same page without it in the address bar."""
    if token is None:
        return None
    given = request.query_params.get("token")
    if given is not None and bearer_ok(f"Bearer {given}", token):
        resp = RedirectResponse(request.url.remove_query_params("token").path, status_code=303)
        resp.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict")
        return resp
    cookie = request.cookies.get(TOKEN_COOKIE)
    if bearer_ok(request.headers.get("authorization"), token) or (cookie and bearer_ok(f"Bearer {cookie}", token)):
        return None
    return _page("error.html", 401, code=401, message="this server needs its token: Authorization: Bearer TOKEN")


def create_app(ledger: Ledger, token: str | None = None) -> Starlette:
    """The app; with `token`, every page needs it (access.py)."""
    pages.preload()
    cache = pages.RunCache()

    def guarded(fn: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def handler(request: Request) -> Response:
            refused = _refused(request, token)
            if refused is not None:
                return refused
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
        metric = q.get("metric") or "resolved"
        excluded = sorted({r.strip() for v in q.getlist("exclude_repo") for r in v.split(",") if r.strip()})
        ctx: dict[str, Any] = {"names": names, "base": base, "cands": cands, "min_diff": min_diff,
                               "by_repo": bool(q.get("by_repo")), "split": q.get("split") or "",
                               "metric": metric, "exclude_repo": ", ".join(excluded),
                               "res": None, "error": None}  # fmt: skip
        if base and cands:
            try:
                named = [base, *cands, *([ctx["split"]] if ctx["split"] else [])]
                versions = tuple(views.run_version(ledger, views.run_by_name(ledger, n).id) for n in named)
                key = ("compare", tuple(named), versions, min_diff, ctx["by_repo"], bool(ctx["split"]), metric,
                       tuple(excluded), ledger_looks.count(ledger))  # fmt: skip
                split, by_repo = ctx["split"] or None, ctx["by_repo"]
                ctx.update(cache.get(key, lambda: pages.compare_page(ledger, base, cands, min_diff, by_repo, split,
                                                                     metric, excluded)))  # fmt: skip
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

    watchers: dict[tuple[str, int], Any] = {}
    watch_lock = threading.Lock()

    def live_state(request: Request) -> tuple[Any, list[Any]]:
        """The run's live state and every alert raised since this server first showed it (training/watch.py)."""
        from trialbook.training.watch import Watcher

        q = request.query_params
        try:
            bucket = int(q.get("bucket") or 5)
        except ValueError:
            raise UserError(f"bucket must be a whole number, not {q.get('bucket')!r}") from None
        key = (q.get("run", ""), bucket)
        with watch_lock:  # one watcher per run: its signature cache and its alerts outlive a page
            w = watchers.get(key) or watchers.setdefault(key, Watcher(ledger, key[0], bucket=bucket))
            w.refresh()
            return w.state, list(w.raised)

    def live(request: Request) -> Response:
        try:
            interval = max(0.2, float(request.query_params.get("interval") or LIVE_INTERVAL_S))
        except ValueError:
            raise UserError(f"interval must be a number of seconds, not {request.query_params['interval']!r}") from None
        s, raised = live_state(request)
        return _page("live.html", headers=LIVE_HEADERS, s=s, alerts=raised, interval=interval)

    def live_json(request: Request) -> Response:
        from trialbook.result_types import to_json

        s, raised = live_state(request)
        return JSONResponse({"state": to_json(s), "alerts": to_json(raised)}, headers={"Cache-Control": "no-store"})

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name != "live.js":
            raise UserError(f"no file {name}")
        return FileResponse(STATIC / name, media_type="text/javascript", headers=SECURITY_HEADERS)

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
        Route("/training/live", guarded(live)),
        Route("/training/live.json", guarded(live_json)),
        Route("/static/{name}", guarded(static)),
        Route("/audit", guarded(audit)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        if (refused := _refused(request, token)) is not None:
            return refused
        return _error(Exception(f"no page at {request.url.path}"), 404)

    return Starlette(routes=routes, exception_handlers={404: not_found})

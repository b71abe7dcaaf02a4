"""The Jinja2 environment shared by the server and the `--html` reports (autoescaped: agent output is hostile)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}%"


def _signed(v: float | None) -> str:
    return "-" if v is None else f"{v:+.2f}"


def _ci(ci: list[float | None] | None) -> str:
    return "-" if not ci or ci[0] is None else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"


def _span(ci: list[float] | None) -> str:
    return "-" if not ci else f"{ci[0]:.1f}-{ci[1]:.1f}%"


def _pval(p: float | None) -> str:
    if p is None or p != p:
        return "-"
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=select_autoescape(["html"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(pct=_pct, signed=_signed, ci=_ci, span=_span, pval=_pval, q=lambda s: quote(str(s), safe=""))
    return env


ENV = environment()


def render(template: str, **ctx: Any) -> str:
    ctx.setdefault("offline", False)
    return ENV.get_template(template).render(**ctx)

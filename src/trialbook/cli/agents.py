"""`agents`: the agent CLIs trialbook installs into a host cache at a pinned version (agents/installed.py)."""

from __future__ import annotations

from typing import Any

import typer

from trialbook.cli.common import Json, app, done, emit

agents_app = typer.Typer(help="Agent CLIs: install them into the host cache, list them.", no_args_is_help=True)
app.add_typer(agents_app, name="agents")


@agents_app.command("install")
def install_cmd(name: str) -> None:
    """Install agent NAME (codex, claude-code, opencode: npm; aider: pip) at its pinned version into the cache."""
    from trialbook.agents.installed import agent, install

    pinned = agent(name)
    path = install(name)
    done(f"{name} {pinned.version} ({pinned.package}): {path}")


@agents_app.command("list")
def list_cmd(as_json: Json = False) -> None:
    """The installable agents: pinned version, wire API, and where the cached binary is (if installed)."""
    from trialbook.agents.installed import CLI_AGENTS, binary, cache_dir

    rows = [{"name": a.name, "version": a.version, "package": a.package, "api": a.api,
             "binary": str(binary(a.name) or "")} for a in CLI_AGENTS.values()]  # fmt: skip

    def human(data: list[dict[str, Any]]) -> None:
        typer.echo(f"cache: {cache_dir()}")
        for r in data:
            where = r["binary"] or f"not installed (trialbook agents install {r['name']})"
            typer.echo(f"{r['name']:<12} {r['version']:<9} {r['api']:<10} {where}")

    emit(rows, as_json, human)

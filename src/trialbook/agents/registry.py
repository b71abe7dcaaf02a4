"""Agent names -> "module:Class" import paths, resolved only when an agent is asked for.

As mini-swe-agent's registries do: naming an agent does not import it, so `agents.base` (the protocol)
never imports a concrete agent, and the `mini` agent's model-client dependencies load only for `mini`.
A class with a `from_options(options)` classmethod is built with the run config's agent_options;
any other class is built with no arguments and takes no options.
"""

from __future__ import annotations

import importlib
from typing import Any

from trialbook.agents.base import Agent
from trialbook.errors import UserError

AGENTS: dict[str, str] = {
    "mini": "trialbook.agents.mini:MiniAgent",
    "nop": "trialbook.agents.nop:NopAgent",
    "oracle": "trialbook.agents.oracle:OracleAgent",
}


def agent_class(name: str) -> type:
    if name not in AGENTS:
        raise UserError(f"unknown agent '{name}' (known: {', '.join(sorted(AGENTS))})")
    module, _, attr = AGENTS[name].partition(":")
    return getattr(importlib.import_module(module), attr)


def get_agent(name: str, options: dict[str, Any] | None = None) -> Agent:
    """The agent called `name`; `options` (the run config's agent_options) configure the LLM agent."""
    cls = agent_class(name)
    build = getattr(cls, "from_options", None)
    return build(options or {}) if callable(build) else cls()

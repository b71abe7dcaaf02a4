"""Agent names -> "module:Class" import paths, resolved only when an agent is asked for.

As mini-swe-agent's registries do: naming an agent does not import it, so `agents.base` (the protocol)
never imports a concrete agent, and the `mini` agent's model-client dependencies load only for `mini`.
A class with a `from_options(options)` classmethod is built with the run config's agent_options;
any other class is built with no arguments and takes no options.

Besides the names, `--agent` takes an import path of your own agent (the protocol is in agents/base.py):
`package.module:Class`, importable from the working directory or the environment, or `path/to/file.py:Class`
(stored absolute, so `resume` and Ray nodes find the same file).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from trialbook.agents.base import Agent
from trialbook.errors import UserError

AGENTS: dict[str, str] = {
    "aider": "trialbook.rl.cli_agents:AiderAgent",
    "claude-code": "trialbook.rl.cli_agents:ClaudeCodeAgent",
    "cmd": "trialbook.agents.command:CommandAgent",
    "codex": "trialbook.rl.cli_agents:CodexAgent",
    "mini": "trialbook.agents.mini:MiniAgent",
    "mini-swe-agent": "trialbook.agents.miniswe:MiniSweAgent",
    "mini-swe-agent-backticks": "trialbook.agents.miniswe:MiniSweBackticksAgent",
    "nop": "trialbook.agents.nop:NopAgent",
    "opencode": "trialbook.rl.cli_agents:OpencodeAgent",
    "oracle": "trialbook.agents.oracle:OracleAgent",
    "patch": "trialbook.agents.patch:PatchAgent",
}


def is_import_path(name: str) -> bool:
    return ":" in name and name not in AGENTS


def agent_spec(name: str) -> str:
    """`name` as stored in a run's config: an agent file's path made absolute (resolved against the cwd)."""
    if not is_import_path(name):
        return name
    where, _, attr = name.rpartition(":")
    return f"{Path(where).resolve()}:{attr}" if where.endswith(".py") else name


def _imported(name: str) -> type:
    where, _, attr = name.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise UserError(f"--agent {name}: no such file {where}")
            spec = importlib.util.spec_from_file_location(f"trialbook_user_agent_{path.stem}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # dataclasses and pickling look a class's module up there
            spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:  # as `python -m` would: the project's packages
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(where)
    except UserError:
        raise
    except Exception as exc:  # the user's module failed to import: say how, in one line
        raise UserError(f"--agent {name}: cannot import {where}: {type(exc).__name__}: {exc}") from None
    cls: type | None = getattr(module, attr, None)
    if cls is None:
        raise UserError(f"--agent {name}: {where} has no attribute {attr!r}")
    if not callable(getattr(cls, "run", None)):
        raise UserError(f"--agent {name}: {attr} has no run(sandbox, task, timeout) method (see trialbook.agents.base)")
    return cls


def agent_class(name: str) -> type:
    if is_import_path(name):
        return _imported(name)
    if name not in AGENTS:
        raise UserError(
            f"unknown agent '{name}' (known: {', '.join(sorted(AGENTS))}; or your own: module:Class, file.py:Class)"
        )
    module, _, attr = AGENTS[name].partition(":")
    found: type = getattr(importlib.import_module(module), attr)
    return found


# `run --gateway`: the agent behind the model gateway (named, as the agents are, not imported: rl is above agents)
GATEWAY = "trialbook.rl.gateway_agent:through_gateway"


def get_agent(name: str, options: dict[str, Any] | None = None) -> Agent:
    """The agent called `name`; `options` (the run config's agent_options) configure the LLM agent; with a
    `gateway` option, the agent behind the model gateway (rl/gateway_agent.py)."""
    if options and options.get("gateway") is not None:
        module, _, attr = GATEWAY.partition(":")
        through = getattr(importlib.import_module(module), attr)
        rest = {k: v for k, v in options.items() if k != "gateway"}
        return through(name, rest, options["gateway"])  # type: ignore[no-any-return]
    cls = agent_class(name)
    build = getattr(cls, "from_options", None)
    agent: Agent = build(options or {}) if callable(build) else cls()
    if not isinstance(getattr(agent, "name", None), str):  # trials record it (extra.agent)
        agent.name = name.rpartition(":")[2]
    return agent

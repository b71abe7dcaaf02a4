"""The agent registry: names resolve lazily to "module:Class", and the protocol imports no agent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trialbook.agents.registry import AGENTS, agent_class, get_agent
from trialbook.errors import UserError


def test_base_imports_no_concrete_agent():
    code = (
        "import sys, trialbook.agents, trialbook.agents.base\n"
        "print(sorted(m for m in sys.modules if m.startswith('trialbook.agents.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['trialbook.agents.base', 'trialbook.agents.registry']"


def test_every_registered_name_resolves_to_its_class():
    for name, path in AGENTS.items():
        cls = agent_class(name)
        assert f"{cls.__module__}:{cls.__name__}" == path and cls.name == name
    assert type(get_agent("oracle")).__name__ == "OracleAgent"
    assert type(get_agent("nop", {})).__name__ == "NopAgent"


def test_unknown_agent_is_one_line_exit_2():
    with pytest.raises(UserError) as exc:
        get_agent("claude")
    assert (
        str(exc.value)
        == "unknown agent 'claude' (known: aider, claude-code, cmd, codex, mini, mini-swe-agent, "
        "mini-swe-agent-backticks, nop, opencode, oracle, patch; or your own: module:Class, file.py:Class)"
        and exc.value.exit_code == 2
    )

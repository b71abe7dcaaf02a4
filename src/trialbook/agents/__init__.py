"""Agents: a small protocol (base), a registry of name -> "module:Class" (registry), one file per agent."""

from trialbook.agents.base import (
    Agent,
    AgentResult,
    AgentTimeoutError,
    ContextOverflowError,
    FormatError,
)
from trialbook.agents.registry import AGENTS, get_agent

__all__ = ["AGENTS", "Agent", "AgentResult", "AgentTimeoutError", "ContextOverflowError", "FormatError", "get_agent"]

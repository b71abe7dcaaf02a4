"""Agents: a small protocol and one file per agent."""

from trialbook.agents.base import (
    Agent,
    AgentResult,
    AgentTimeoutError,
    ContextOverflowError,
    FormatError,
    get_agent,
)

__all__ = ["Agent", "AgentResult", "AgentTimeoutError", "ContextOverflowError", "FormatError", "get_agent"]

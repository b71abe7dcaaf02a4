"""Agent output made safe to show: ANSI codes removed, control characters made visible, trajectories as turns.

The templates autoescape everything, so `<script>` in a log is shown as text; these helpers only
take care of what escaping does not (terminal escape sequences, NULs, unreadable JSON).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \) and two-byte ESC sequences
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str | None) -> str:
    """Terminal text as plain text: escape sequences dropped, other control characters shown as U+FFFD."""
    if not text:
        return ""
    return _CONTROL.sub("\ufffd", _ANSI.sub("", text.replace("\r\n", "\n")))


@dataclass(frozen=True)
class TranscriptTurn:
    n: int
    role: str
    text: str


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI-style content parts
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value)
    return json.dumps(value, indent=1, default=str)


def _atif_step(step: dict[str, Any]) -> list[tuple[str, str]]:
    """One step of a Harbor (ATIF) trajectory: the message, its tool calls, their observation."""
    parts = [(str(step.get("source") or "agent"), _content(step.get("message") or ""))]
    for call in step.get("tool_calls") or []:
        args = call.get("arguments") if isinstance(call, dict) else call
        parts.append(("tool call", _content(args)))
    obs = step.get("observation")
    if obs:
        results = obs.get("results") if isinstance(obs, dict) else None
        text = "\n".join(_content(r.get("content", r)) for r in results) if results else _content(obs)
        parts.append(("observation", text))
    return parts


def _commands(message: dict[str, Any]) -> list[str]:
    """The commands mini-swe-agent parsed from a reply (`extra.actions`): a tool-calling model's reply
    text does not hold them, a text-based one's does (then they are not repeated)."""
    extra = message.get("extra")
    actions = extra.get("actions") if isinstance(extra, dict) else None
    return [str(a["command"]) for a in actions or [] if isinstance(a, dict) and a.get("command")]


def trajectory_turns(raw: str) -> list[TranscriptTurn] | None:
    """Turns of a trajectory JSON (mini-swe-agent `messages`, Harbor ATIF `steps`); None if unreadable."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    pairs: list[tuple[str, str]] = []
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        for m in doc["messages"]:
            if isinstance(m, dict):
                text = _content(m.get("content") or "")
                pairs.append((str(m.get("role", "?")), text))
                pairs += [("command", c) for c in _commands(m) if c not in text]
        pairs += [("action", _content(a)) for a in doc.get("actions") or []]
    elif isinstance(doc, dict) and isinstance(doc.get("steps"), list):
        pairs = [p for s in doc["steps"] if isinstance(s, dict) for p in _atif_step(s)]
    elif isinstance(doc, list):
        pairs = [(str(m.get("role", "?")), _content(m.get("content", m))) for m in doc if isinstance(m, dict)]
    if not pairs:
        return None
    return [TranscriptTurn(i + 1, role, clean_text(text)) for i, (role, text) in enumerate(pairs)]

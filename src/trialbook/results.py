"""Typed results: what the computing layers return and the printers take.

A result is a frozen dataclass; `to_json()` gives its documented JSON form: the fields in declaration
order (nested results, lists and dicts converted the same way), with two per-field options:
`optional()` leaves the key out while the value is None, and `key="..."` names a key that is not a
Python identifier (e.g. `from`).
"""

from __future__ import annotations

import dataclasses
from typing import Any


def optional(**kwargs: Any) -> Any:
    """A field (default None) whose key the JSON form leaves out while its value is None."""
    return dataclasses.field(default=kwargs.pop("default", None), metadata={"optional": True, **kwargs})


def renamed(key: str, **kwargs: Any) -> Any:
    """A field whose JSON key is `key` (a Python keyword such as `from`)."""
    return dataclasses.field(metadata={"key": key}, **kwargs)


def to_json(value: Any) -> Any:
    """`value` as plain JSON data: results by their `to_json`, containers item by item."""
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


@dataclasses.dataclass(frozen=True)
class Result:
    """Base of every typed result (no fields of its own)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.metadata.get("optional"):
                continue
            out[f.metadata.get("key", f.name)] = to_json(value)
        return out

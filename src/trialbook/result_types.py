"""Typed results: what the computing layers return and the printers take.

A result is a frozen dataclass; `to_json()` gives its documented JSON form: the fields in declaration
order (nested results, lists and dicts converted the same way), with per-field options:
`optional()` leaves the key out while the value is None (with `keep_none=True`: only while it is
ABSENT, so None still prints as null), and `key="..."` names a key that is not a Python identifier
(e.g. `from`). `from_json()` is the inverse, for results a module still assembles as plain data.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Final, TypeVar, get_args, get_origin


class Absent:
    """The value of an optional field whose key the JSON form leaves out (see `optional`)."""

    def __repr__(self) -> str:
        return "ABSENT"

    def __bool__(self) -> bool:
        return False


ABSENT: Final = Absent()
R = TypeVar("R", bound="Result")


def optional(*, default: Any = None, keep_none: bool = False, key: str | None = None) -> Any:
    """A field whose key the JSON form leaves out while its value is None (or ABSENT)."""
    meta: dict[str, Any] = {"optional": True, "keep_none": keep_none}
    if key:
        meta["key"] = key
    return dataclasses.field(default=default, metadata=meta)


def renamed(key: str) -> Any:
    """A required field whose JSON key is `key` (a Python keyword such as `from`), in a `kw_only` dataclass (to a
    type checker a field given a value has a default: no field without one may follow it otherwise)."""
    return dataclasses.field(metadata={"key": key})


def to_json(value: Any) -> Any:
    """`value` as plain JSON data: results by their `to_json`, containers item by item."""
    if isinstance(value, Result):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def _build(hint: Any, value: Any) -> Any:
    """`value` (plain JSON data) as the type `hint` names: results rebuilt, containers item by item."""
    if value is None:
        return None
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        results = [a for a in get_args(hint) if isinstance(a, type) and issubclass(a, Result)]
        containers = [a for a in get_args(hint) if get_origin(a) in (list, dict)]
        return _build((results or containers or [Any])[0], value)
    if isinstance(hint, type) and issubclass(hint, Result):
        return hint.from_json(value)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        return [_build(item, v) for v in value]
    if origin is dict:
        _, item = get_args(hint) or (Any, Any)
        return {k: _build(item, v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class Result:
    """Base of every typed result (no fields of its own)."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("optional") and (value is ABSENT or (value is None and not f.metadata["keep_none"])):
                continue
            out[f.metadata.get("key", f.name)] = to_json(value)
        return out

    @classmethod
    def from_json(cls: type[R], data: dict[str, Any]) -> R:
        """The result whose `to_json()` is `data`; a key the type does not declare is an error."""
        hints = typing.get_type_hints(cls)
        fields = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(fields)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field for {sorted(unknown)}")
        return cls(**{fields[k].name: _build(hints[fields[k].name], v) for k, v in data.items()})

"""The printers take typed results, never dicts: every function of trialbook.report (and the public ones of
the web's plots, and the CLI's own printers) is annotated, no parameter is Any or a record-as-dict (`dict`
with Any values; a map with typed values is fine), and each printer's input is a frozen `Result` dataclass.
The JSON forms stay what the README documents: `Result.to_json()` keeps the field order, leaves out
optional keys and renames keyword fields, and `from_json()` is its inverse."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing
from typing import Any

import pytest

import trialbook
import trialbook.report
from trialbook.result_types import ABSENT, Absent, Result, optional, renamed

# the modules that define the results the printers take (imported so their classes are known)
RESULT_MODULES = [
    "trialbook.stats.run_summaries", "trialbook.stats.comparison", "trialbook.stats.power", "trialbook.audit.failures",
    "trialbook.audit.regrade", "trialbook.audit.attribute", "trialbook.training.report_types",
    "trialbook.harness.workflows.validate", "trialbook.harness.workflows.quickstart", "trialbook.outcomes",
    "trialbook.tasks.swebench.generate", "trialbook.tasks.swebench.build", "trialbook.pool.synthesize",
    "trialbook.pool.overlap", "trialbook.pool.rebench",
]  # fmt: skip
PRINTERS = ("print_", "_print_", "markdown_", "summary_paragraph", "sensitivity_lines")


def _subclasses(cls: type) -> list[type]:
    return [c for s in cls.__subclasses__() for c in (s, *_subclasses(s))]


def _results() -> dict[str, type]:
    for name in RESULT_MODULES:
        importlib.import_module(name)
    return {c.__name__: c for c in _subclasses(Result)}


def _functions() -> list[tuple[str, Any]]:
    names = [f"trialbook.report.{m.name}" for m in pkgutil.iter_modules(trialbook.report.__path__)]
    out = []
    for name in [*names, "trialbook.web.plots", "trialbook.cli.harness"]:
        module = importlib.import_module(name)
        out += [(f"{name}.{fn}", obj) for fn, obj in vars(module).items()
                if inspect.isfunction(obj) and obj.__module__ == name
                and not (name == "trialbook.web.plots" and fn.startswith("_"))
                and (name != "trialbook.cli.harness" or fn.startswith("_print"))]  # fmt: skip
    return out


def _hints(fn: Any, results: dict[str, type]) -> dict[str, Any]:
    namespace = {**vars(importlib.import_module(fn.__module__)), **results}
    return typing.get_type_hints(fn, globalns=namespace)


def _untyped(hint: Any) -> bool:
    """Any, a bare dict, or a dict whose values are Any (a record passed as a dict), at any depth."""
    if hint is Any or hint is dict:
        return True
    if typing.get_origin(hint) is dict and typing.get_args(hint)[1] is Any:
        return True
    return any(_untyped(arg) for arg in typing.get_args(hint))


def test_every_report_function_is_annotated_without_dicts_or_any():
    results = _results()
    bad = []
    for where, fn in _functions():
        params = inspect.signature(fn).parameters
        hints = _hints(fn, results)
        for p in params:
            if p not in hints:
                bad.append(f"{where}({p}): no annotation")
            elif _untyped(hints[p]):
                bad.append(f"{where}({p}): {hints[p]}")
    assert not bad, bad


def test_every_printer_takes_a_frozen_result():
    results = _results()
    printers = [(w, fn) for w, fn in _functions() if fn.__name__.startswith(PRINTERS)]
    assert len(printers) >= 15
    for where, fn in printers:
        first = next(iter(inspect.signature(fn).parameters))
        hint = _hints(fn, results)[first]
        inner = typing.get_args(hint)[0] if typing.get_origin(hint) is list else hint
        assert isinstance(inner, type) and issubclass(inner, Result), (where, hint)
        assert inner.__dataclass_params__.frozen, where  # type: ignore[attr-defined]


def test_every_result_class_is_frozen_and_fully_typed():
    for name, cls in _results().items():
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
        hints = typing.get_type_hints(cls)
        assert all(f.name in hints and hints[f.name] is not Any for f in dataclasses.fields(cls)), name


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Inner(Result):
    from_: str = renamed("from")
    n: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Outer(Result):
    name: str
    rows: list[_Inner]
    by_key: dict[str, _Inner]
    note: str | None = optional()
    rate: float | None | Absent = optional(default=ABSENT, keep_none=True)
    kept: float | None = None


def test_to_json_keeps_order_leaves_out_optional_keys_and_round_trips():
    inner = _Inner(from_="a", n=1)
    plain = _Outer(name="x", rows=[inner], by_key={"k": inner})
    assert plain.to_json() == {"name": "x", "rows": [{"from": "a", "n": 1}], "by_key": {"k": {"from": "a", "n": 1}},
                               "kept": None}  # fmt: skip
    assert list(plain.to_json()) == ["name", "rows", "by_key", "kept"]
    full = dataclasses.replace(plain, note="n", rate=None)
    assert list(full.to_json()) == ["name", "rows", "by_key", "note", "rate", "kept"]
    assert full.to_json()["rate"] is None  # keep_none: null, not left out
    for result in (plain, full):
        assert _Outer.from_json(result.to_json()) == result
    with pytest.raises(TypeError, match="no field for"):
        _Inner.from_json({"from": "a", "n": 1, "extra": 2})
    with pytest.raises(dataclasses.FrozenInstanceError):
        plain.name = "y"  # type: ignore[misc]


def test_the_ledger_has_no_dict_views():
    from trialbook.ledger.rows import RunRow, TrialRow
    from trialbook.ledger.store import Ledger

    assert not hasattr(Ledger, "run") and not hasattr(Ledger, "trials")
    assert not hasattr(RunRow, "as_dict") and not hasattr(TrialRow, "as_dict")
    assert trialbook  # (the package imports)

"""Option groups: several of a command's options taken as one object (harness/placement/choice.py's Where, a stats
command's
request), so that no command function carries more than a handful of parameters (ruff PLR0913, max-args 8).

    WHERE = Group(Where, executor=ExecutorKind, backend=BackendKind, ...)   # field -> its typer Annotated option

    @app.command("grade")
    @grouped(where=WHERE)
    def grade_cmd(predictions: Path, ..., where: Where) -> None: ...

Typer sees each field as an option of its own (the Annotated type the group gives it, else the dataclass field's
own annotation) with the field's default (or the group's `defaults`); the function gets the object built from
them. A field's parameter name is the field's name: two groups of one command must not share a field name."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from trialbook.cli.common import Csv, Json, Markdown, emit

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class Group:
    """A dataclass `cls` as command-line options: `options` gives a field its Annotated typer type (a field not
    named keeps its own annotation, which must then be one); `defaults` overrides the dataclass's defaults."""

    cls: type[Any]
    options: dict[str, Any]
    defaults: dict[str, Any]
    omit: tuple[str, ...]  # fields that are no option (the dataclass's default is kept)

    def __init__(
        self, cls: type[Any], defaults: dict[str, Any] | None = None, omit: tuple[str, ...] = (), **options: Any
    ) -> None:
        object.__setattr__(self, "cls", cls)
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "defaults", defaults or {})
        object.__setattr__(self, "omit", omit)

    def but(self, **defaults: Any) -> Group:
        """The same group with other defaults (validate runs 2 trials at once where run runs 1)."""
        return Group(self.cls, {**self.defaults, **defaults}, self.omit, **self.options)

    def _fields(self) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(self.cls) if f.name not in self.omit]

    def parameters(self) -> list[inspect.Parameter]:
        """The command's parameters for the group's fields (a field whose option is a Group: that group's)."""
        hints = typing.get_type_hints(self.cls, include_extras=True)
        out = []
        for f in self._fields():
            if isinstance(self.options.get(f.name), Group):
                out.extend(self.options[f.name].parameters())
                continue
            if f.name in self.defaults:
                default = self.defaults[f.name]
            elif f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = None  # built() calls the factory (a list option typer leaves empty is None too)
            else:
                default = inspect.Parameter.empty
            annotation = self.options.get(f.name, hints[f.name])
            out.append(
                inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
            )
        return out

    def build(self, given: dict[str, Any]) -> Any:
        """The object, from the options' values (popped from `given`). A list option left empty is None to typer."""
        values = {}
        for f in self._fields():
            if isinstance(self.options.get(f.name), Group):
                values[f.name] = self.options[f.name].build(given)
                continue
            value = given.pop(f.name)
            if value is None and f.default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
                value = f.default_factory()
            values[f.name] = value
        return self.cls(**values)


def grouped(**groups: Group) -> Callable[[F], F]:
    """A command decorator (under @app.command): each parameter named in `groups` becomes its group's options."""

    def wrap(fn: F) -> F:
        signature = inspect.signature(fn, eval_str=True)
        params: list[inspect.Parameter] = []
        for p in signature.parameters.values():
            group = groups.get(p.name)
            if group is None:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            else:
                params.extend(group.parameters())
        names = [p.name for p in params]
        if len(set(names)) < len(names):
            raise TypeError(f"{fn.__name__}: two options of the same name in {names}")

        @functools.wraps(fn)
        def command(**given: Any) -> Any:
            built = {name: group.build(given) for name, group in groups.items()}
            return fn(**given, **built)

        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return wrap


@dataclasses.dataclass
class Output:
    """How a command prints its result: JSON, Markdown or CSV (else the terminal's tables)."""

    as_json: Json = False
    markdown: Markdown = False
    as_csv: Csv = False

    def emit(self, data: Any, human: Any) -> None:
        emit(data, self.as_json, human, self.markdown, self.as_csv)


OUTPUT = Group(Output)

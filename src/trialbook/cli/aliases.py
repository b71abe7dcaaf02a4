"""Old option spellings that keep working: one name per concept across commands, without breaking scripts.

When an option is renamed so that one name means one thing in every command (tests/cli/test_option_names.py
pins the rule over the whole command tree), its old spelling stays here. Before Click parses the command line
the old spelling is rewritten to today's name and one warning line goes to stderr. An alias is hidden: it is
no option of its command, so no `--help` lists it.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import typer
from typer.core import TyperGroup

# command path -> {old spelling: today's name}
ALIASES: dict[str, dict[str, str]] = {
    "run": {"--tasks": "--task"},
    "validate": {"--tasks": "--task", "--repeats": "--attempts"},
    "grade": {"--tasks": "--tasks-dir"},
    "reverify": {"--tasks": "--tasks-dir"},
    "plan": {"--repeats": "--attempts"},
    "prereg init": {"--holdout-repeats": "--holdout-attempts"},
    "tasks from-swebench": {"--ids": "--task"},
    "sim pipeline": {"--pool": "--tasks"},
    "sim rollouts": {"--pool": "--tasks", "--step-s": "--train-step-s"},
    "train watch": {"--max-staleness": "--staleness"},
    "train export": {"--dir": "--out"},
    "report": {"--train": "--train-run"},
}


def _leaf(root: Any, args: list[str]) -> tuple[str, Any, int]:
    """The command `args` invokes under `root`: its path ("prereg init"), the command, where its own args start."""
    path, cmd, i = [], root, 0
    while hasattr(cmd, "commands"):
        while i < len(args) and args[i].startswith("-"):  # a group's own options are flags (--help, --json)
            i += 1
        if i == len(args) or args[i] not in cmd.commands:
            return "", None, len(args)
        path.append(args[i])
        cmd, i = cmd.commands[args[i]], i + 1
    return " ".join(path), cmd, i


def _value_options(cmd: Any) -> set[str]:
    return {
        name
        for p in cmd.params
        if p.param_type_name == "option" and not p.is_flag and not getattr(p, "count", False)
        for name in p.opts
    }


def rewrite(root: Any, args: list[str]) -> list[str]:
    """`args` with every old spelling of its command's options replaced by today's name (warning once per
    spelling on stderr). A token that is the value of another option (`--agent-cmd --tasks`) is left alone,
    as is everything after `--`. Both spellings of a single-valued option given: a usage error (exit 2)."""
    path, cmd, start = _leaf(root, args)
    renames = ALIASES.get(path)
    if not renames:
        return args
    takes_value = _value_options(cmd)
    takes_value |= {old for old, new in renames.items() if new in takes_value}
    multiple = {name for p in cmd.params if getattr(p, "multiple", False) for name in p.opts}
    out, given, renamed = list(args[:start]), set[str](), dict[str, str]()
    j = start
    while j < len(args):
        token = args[j]
        if token == "--":
            out.extend(args[j:])
            break
        name, eq, value = token.partition("=")
        if name in renames:
            if name not in renamed.values():
                typer.echo(f"warning: {name} is now {renames[name]} (the old name still works)", err=True)
            renamed[renames[name]] = name
            token = renames[name] + eq + value
        elif name.startswith("--"):
            given.add(name)
        out.append(token)
        if not eq and name in takes_value and j + 1 < len(args):
            out.append(args[j + 1])
            j += 1
        j += 1
    for new, old in renamed.items():
        if new in given and new not in multiple:
            raise typer.BadParameter(f"give {new} or its old name {old}, not both")
    return out


# Click's UsageError as Typer raises it (Typer 0.2x vendors Click as typer._click; older ones use click itself)
UsageError: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


def _one_line(self: Any, file: Any = None) -> None:
    """A usage error as every other error is shown: one line with the prefix `error:` (not Click's usage block)."""
    hint = f" (`{self.ctx.command_path} -h` for help)" if self.ctx is not None else ""
    typer.echo(f"error: {self.format_message().rstrip('.')}{hint}", file=file, err=file is None)


@contextlib.contextmanager
def _usage_in_one_line() -> Iterator[None]:
    try:
        yield
    except UsageError as exc:
        exc.show = types.MethodType(_one_line, exc)  # type: ignore[attr-defined]  # UsageError, found at run time
        raise


class AliasGroup(TyperGroup):
    """The root command group: rewrites old option spellings (ALIASES) before anything is parsed, and shows a
    usage error (a missing argument, an unknown option, a bad value) as one `error:` line."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, rewrite(self, args))

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        with _usage_in_one_line():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: Any) -> Any:
        with _usage_in_one_line():
            return super().invoke(ctx)

"""Errors the CLI turns into one line on stderr and an exit code (never a traceback)."""

from __future__ import annotations


class TrialbookError(Exception):
    exit_code = 1


class UserError(TrialbookError):
    """Bad input or usage: exit 2, the ledger untouched."""

    exit_code = 2


class InputWarning(UserWarning):
    """Input a command goes on without (a newer task.toml schema's keys): `cli.main` prints it as one line."""


class LineError(UserError):
    """Bad input at one line of a file (counted from 1)."""

    def __init__(self, line: int, detail: str) -> None:
        super().__init__(line, detail)  # both in args, so the error survives pickling from a worker
        self.line, self.detail = line, detail

    def __str__(self) -> str:
        return f"line {self.line}: {self.detail}"

    def shifted(self, lines: int) -> LineError:
        """The same error in a file where `lines` lines come before the one it was counted in."""
        return LineError(self.line + lines, self.detail)

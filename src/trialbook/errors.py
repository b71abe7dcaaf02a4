"""Errors the CLI turns into one line on stderr and an exit code (never a traceback)."""


class TrialbookError(Exception):
    exit_code = 1


class UserError(TrialbookError):
    """Bad input or usage: exit 2, the ledger untouched."""

    exit_code = 2

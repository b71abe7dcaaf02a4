"""Optional dependencies (pyproject's extras): what each provides, and one clear line when it is missing.

`pip install .` (a clone, or a wheel built from it: trialbook is not on PyPI) covers the ledger, imports, compare,
plan, prereg, audit, train report and sim; the mini agent, TRL training, PostgreSQL ledgers, building SWE-bench
task folders and `--executor ray` each need an extra (docs/install.md's table). Call `require` where such a module
is first imported, so a missing extra is a usage error (exit 2) naming the pip command instead of a traceback.
"""

from __future__ import annotations

import importlib
import importlib.util

from trialbook.errors import UserError

# extra -> the modules it installs that trialbook imports
EXTRAS: dict[str, tuple[str, ...]] = {
    "agent": ("minisweagent",),
    "train": ("trl", "transformers", "datasets"),
    "postgres": ("psycopg",),
    "swebench": ("swebench.harness.test_spec.python",),
    "ray": ("ray",),
    "web": ("starlette", "uvicorn", "jinja2", "matplotlib"),
    "verifiers": ("verifiers.legacy.envs.multiturn_env", "datasets"),
    "skyrl": ("skyrl_gym",),
}


class MissingExtraError(UserError):
    """A command needs an optional extra that is not installed."""


def require(extra: str, what: str) -> None:
    """Import the modules of `extra`, or raise "<what> needs the <extra> extra: pip install ..."."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ImportError as exc:  # missing, or installed without its own dependencies
            raise MissingExtraError(f"{what} needs the {extra} extra: pip install 'trialbook[{extra}]'") from exc


def present(extra: str, what: str) -> None:
    """`require` without importing: each module's top-level package is found on the path (importlib's finders, a few
    ms), or the same one line as `require`. For an extra whose import costs seconds (swebench's: datasets, pandas,
    modal) where the import itself can wait for the first use; an extra installed without its own dependencies is
    then reported where it is first imported."""
    for module in EXTRAS[extra]:
        try:
            found = importlib.util.find_spec(module.split(".")[0]) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(f"{what} needs the {extra} extra: pip install 'trialbook[{extra}]'")

"""The gold statuses the strict verdict is anchored to, as `validate` records them from the reference solution's runs.

The strict verdict (verify/grading.strict_verdict) asks each listed test for the status it has with the reference
solution: PASSED unless tests/config.json's GOLD_STATUSES says otherwise (an XFAIL a task's suite expects, say). That
map comes from here: the oracle's trials of a `validate` run keep, in `extra.not_gold`, every listed test whose status
was not PASSED; a status the oracle gave a test in every one of its graded repeats, and that is a status a test can
have with a working fix (XFAIL, XPASS, SKIPPED; never FAILED, ERROR or missing), is that test's gold status. `validate`
prints it in the task's details (`gold_statuses`) with the config.json line that records it; a test whose status
moved between repeats is flaky (validate's own rule) and gets none. `validate --write-gold` writes it into the task's
tests/config.json itself (`write_gold`); the next `validate` checks the task with it.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.extra_schema import read_extra

RECORDABLE = frozenset(("XFAIL", "XPASS", "SKIPPED"))  # a reference solution's status other than PASSED


def gold_statuses(oracle_extras: Iterable[Mapping[str, Any] | None]) -> dict[str, str]:
    """test -> its gold status other than PASSED, from the `extra` of each graded oracle trial (strict verdict
    recorded: `official_reward` present); {} when no trial was graded so or no test kept one status everywhere."""
    graded = [e for e in map(read_extra, oracle_extras) if e.official_reward is not None]
    if not graded:
        return {}
    seen: dict[str, set[str]] = {}
    for extra in graded:
        for test, status in extra.not_gold.items():
            seen.setdefault(test, set()).add(status)
    out = {}
    for test, statuses in sorted(seen.items()):
        everywhere = all(test in e.not_gold for e in graded)
        if everywhere and len(statuses) == 1 and (status := next(iter(statuses))) in RECORDABLE:
            out[test] = status
    return out


def config_line(statuses: dict[str, str]) -> str:
    """The tests/config.json entry that records `statuses`."""
    return f'"GOLD_STATUSES": {json.dumps(statuses, sort_keys=True)}'


def write_gold(task_dir: Path, statuses: dict[str, str]) -> Path:
    """Merge `statuses` into `task_dir`/tests/config.json's GOLD_STATUSES (other keys kept, a test's earlier entry
    replaced) by an atomic rename, so a killed write leaves the old file whole. A config.json that is missing, not a
    JSON object, or a symlink (the write would land elsewhere) is refused with a UserError."""
    config = task_dir / "tests" / "config.json"
    if config.is_symlink() or not config.is_file():
        raise UserError(f"{config}: not a regular file; record the GOLD_STATUSES line validate printed by hand")
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{config}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{config}: not a JSON object")
    given = data.get("GOLD_STATUSES")
    old = given if isinstance(given, dict) else {}
    data["GOLD_STATUSES"] = dict(sorted({**old, **statuses}.items()))
    fd, tmp = tempfile.mkstemp(dir=config.parent, prefix=".config.json.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=2)
            out.write("\n")
        os.chmod(tmp, config.stat().st_mode & 0o777)
        os.replace(tmp, config)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return config

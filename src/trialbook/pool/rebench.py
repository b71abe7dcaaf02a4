"""`tasks from-rebench`: task folders from SWE-rebench rows, built here from each row's pinned requirements.

A row (SWE-rebench V1's shape) carries `install_config` (python, `install`, `pip_packages`, `log_parser`, ...) and
`requirements`, the exact pins of the environment it was validated in. The environment image installs those pins as
they are (`--no-deps`: nothing is resolved, so it is the recorded environment or the build fails), then the
repository editable with no dependencies of its own (pool/images.py); the task image holds the tree at
`base_commit` as one fresh commit, so the fix (the repository's later history) is not in it. The interpreter is the
base image's (3.11): a row asking for another one is built under the same rule as `tasks from-swebench --build`
(at most 2 minor versions away), and the task says which it got (`[metadata] python`, `python_asked`). test.sh
applies the row's `test_patch` and runs the test files it changes with per-test result lines (`-rA`).
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.files import json_lines
from trialbook.pool import images
from trialbook.pool.synthesize import checkout, solve_sh, write_task_folder
from trialbook.result_types import Result, optional
from trialbook.tasks.swebench.build_images import Builder, BuildFailed

IMAGE_PYTHON = (3, 11)  # trialbook-base:bookworm's
PYTHON_SPAN = 2  # minor versions away a row's python may be (build_plan's rule)
PARSERS = ("parse_log_pytest", "parse_log_pytest_v2", "parse_log_pytest_options")
REQUIRED = ("instance_id", "repo", "base_commit", "patch", "test_patch", "FAIL_TO_PASS", "PASS_TO_PASS")
PATCHED = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.MULTILINE)


@dataclass(frozen=True)
class RebenchLine(Result):
    task_id: str
    status: str  # built, refused, infra_error
    reason: str | None = optional()
    image: str | None = optional()
    env_image: str | None = optional()
    python: str | None = optional()
    seconds: float | None = optional()


@dataclass(frozen=True)
class RebenchBuilt(Result):
    out: str
    written: list[str]
    rows: list[RebenchLine]


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A JSON object (one row), a JSON list of rows, or JSON Lines."""
    if not path.is_file():
        raise UserError(f"no such file: {path}")
    text = path.read_text()
    try:
        data = json.loads(text)
        rows = data if isinstance(data, list) else [data]
    except ValueError:
        rows = [obj for _, obj in json_lines(path, prefix=f"{path}: ")]
    for i, row in enumerate(rows, 1):
        if not isinstance(row, dict):
            raise UserError(f"{path}: row {i} is not an object")
        missing = [k for k in REQUIRED if not row.get(k) and k not in ("PASS_TO_PASS",)]
        if missing or not isinstance(row.get("install_config"), dict):
            what = missing[0] if missing else "install_config"
            raise UserError(f"{path}: row {i} ({row.get('instance_id', '?')}) has no {what}")
    return rows


def pins(requirements: str) -> list[str]:
    """The exact pins of a row's `requirements` (newline- or space-separated; comments and `-e` lines dropped)."""
    out = []
    for token in re.split(r"\s+", re.sub(r"#.*", "", requirements or "")):
        if token and not token.startswith("-") and "==" in token:
            out.append(token)
    return out


def row_refusal(row: dict[str, Any]) -> str | None:
    cfg = row["install_config"]
    parser = cfg.get("log_parser") or "parse_log_pytest"
    if parser not in PARSERS:
        return f"log parser {parser} is not pytest's"
    asked = str(cfg.get("python") or "3.11")
    m = re.fullmatch(r"3\.(\d+)", asked)
    if m is None or abs(int(m.group(1)) - IMAGE_PYTHON[1]) > PYTHON_SPAN:
        return f"python {asked}: more than {PYTHON_SPAN} minor versions from the image's 3.{IMAGE_PYTHON[1]}"
    if not pins(str(row.get("requirements") or "")):
        return "no pinned requirements"
    return None


UNMET = re.compile(r"The package `([^`]+)` requires `([^`]+)`, but (?:it's not installed|`([^`]+)` is installed)")


def unmet_pins(build_error: str) -> str | None:
    """The one line for a build whose pins `uv pip check` found not working together; None for any other failure."""
    found = UNMET.findall(build_error)
    if not found:
        return None
    each = [f"{pkg} needs {req} ({f'{have} pinned' if have else 'not pinned'})" for pkg, req, have in found]
    return "its pinned requirements do not work together (uv pip check): " + "; ".join(each)


def _listed(value: Any) -> list[str]:
    return [str(x) for x in (json.loads(value) if isinstance(value, str) else value or [])]


def patched_test_files(test_patch: str) -> list[str]:
    """The test modules the test patch changes (what the test command runs)."""
    files = dict.fromkeys(b for _, b in PATCHED.findall(test_patch))
    name = re.compile(r"(^|/)(test_[^/]*|[^/]*_test)\.py$")
    return [f for f in files if name.search(f)]


def rebench_test_sh(row: dict[str, Any], existing: list[str]) -> str:
    files = patched_test_files(row["test_patch"])
    restore = " ".join(shlex.quote(f) for f in existing)
    cmd = ["python", "-m", "pytest", "-rA", "--tb=short", "-p", "no:cacheprovider", *files]
    return "\n".join(
        [
            "#!/bin/bash",
            f"# Verifier for {row['instance_id']} (SWE-rebench row, `tasks from-rebench`): the test files the",
            "# row's test patch changes, restored and patched, run with one result line per test (-rA).",
            "set -uxo pipefail",
            f"cd {images.REPO_DIR} || exit 1",
            *([f"git checkout -q HEAD -- {restore}"] if restore else []),
            "git apply -v - <<'EOF_TEST_PATCH'",
            row["test_patch"].rstrip("\n"),
            "EOF_TEST_PATCH",
            " ".join(shlex.quote(c) for c in cmd),
            *([f"git checkout -q HEAD -- {restore}"] if restore else []),
            "",
        ]
    )


def _toml(row: dict[str, Any], image: str, python: str) -> str:
    q = json.dumps
    asked = str(row["install_config"].get("python") or "")
    return "\n".join(
        [
            "# SWE-rebench row on an image built here from its pinned requirements (`trialbook tasks from-rebench`).",
            "[metadata]",
            f"repo = {q(row['repo'])}",
            f"instance_id = {q(row['instance_id'])}",
            f"base_commit = {q(row['base_commit'])}",
            'source = "swe-rebench"',
            f"python = {q(python)}",
            *([f"python_asked = {q(asked)}"] if asked and not python.startswith(asked + ".") else []),
            *([f"rebench_image = {q(str(row['docker_image']))}"] if row.get("docker_image") else []),
            "",
            "[agent]",
            "timeout_sec = 1800.0",
            "",
            "[verifier]",
            "timeout_sec = 900.0",
            "",
            "[environment]",
            f"docker_image = {q(image)}",
            f"workdir = {q(images.REPO_DIR)}",
            "cpus = 1",
            "memory_mb = 2048",
            "",
        ]
    )


def build_rows(path: Path, out: Path, repos: Path, ids: list[str] | None = None) -> RebenchBuilt:
    import time

    rows = read_rows(path)
    if ids:
        unknown = sorted(set(ids) - {r["instance_id"] for r in rows})
        if unknown:
            raise UserError(f"unknown instance id {unknown[0]!r}: not in {path}")
        rows = [r for r in rows if r["instance_id"] in set(ids)]
    if not repos.is_dir():
        raise UserError(f"--repos {repos} is not a folder")
    try:
        builder = Builder()
    except BuildFailed as exc:
        raise UserError(str(exc)) from None
    lines: list[RebenchLine] = []
    for row in rows:
        tid = row["instance_id"]
        reason = row_refusal(row)
        if reason is not None:
            lines.append(RebenchLine(tid, "refused", reason))
            continue
        source = repos / f"{row['repo'].replace('/', '__')}.git"
        if not source.is_dir():
            raise UserError(f"--repos {repos} has no {source.name} (for {tid})")
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="tb-rebench-") as tmp:
            checkout(source, row["base_commit"], Path(tmp) / "repo")
            files = images.tree_files(Path(tmp) / "repo")
        try:
            wanted = [*pins(str(row["requirements"]))]
            env = images.ensure_env(builder, files, wanted, row["repo"], row["base_commit"], pinned=True)
            image = images.ensure_task(builder, env, tid, files)
        except BuildFailed as exc:
            lines.append(RebenchLine(tid, "infra_error", unmet_pins(str(exc)) or f"image build failed: {exc}"))
            continue
        python = f"{IMAGE_PYTHON[0]}.{IMAGE_PYTHON[1]}"
        existing = [f for f in patched_test_files(row["test_patch"]) if f in files]
        config = {
            "instance_id": tid,
            "repo": row["repo"],
            "base_commit": row["base_commit"],
            "FAIL_TO_PASS": _listed(row["FAIL_TO_PASS"]),
            "PASS_TO_PASS": _listed(row["PASS_TO_PASS"]),
        }
        write_task_folder(out / tid, {
            "instruction.md": str(row.get("problem_statement") or ""),
            "task.toml": _toml(row, image, python),
            "tests/config.json": json.dumps(config, indent=1) + "\n",
            "tests/test.sh": rebench_test_sh(row, existing),
            "solution/solve.sh": solve_sh(row["patch"]),
        })  # fmt: skip
        lines.append(RebenchLine(tid, "built", image=image, env_image=env, python=python,
                                 seconds=round(time.monotonic() - t0, 1)))  # fmt: skip
    return RebenchBuilt(str(out), [x.task_id for x in lines if x.status == "built"], lines)

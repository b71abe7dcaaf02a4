"""Running a repository's tests on its environment image, one candidate after another, in one container.

The container (no network) gets the original tree at /testbed; each candidate writes its file, runs the suite with
the task's own test command, and writes the original back. The log is parsed by the harness's own per-test parser
(verify/grading.py), so what a candidate's run calls FAIL_TO_PASS is what a verifier run will.
"""

from __future__ import annotations

import io
import re
import shlex
import subprocess
import tarfile
import time
import uuid
from dataclasses import dataclass

from trialbook.pool.images import REPO_DIR
from trialbook.verify.grading import parse_status_map

PASSING = ("PASSED", "XFAIL")
FAILURES = re.compile(r"^=+ (FAILURES|ERRORS) =+$")
SECTION_END = re.compile(r"^=+ .* =+$")
BLOCK = re.compile(r"^_{3,} (.+?) _{3,}$")


def suite_command(tests: list[str], pytest_args: list[str]) -> str:
    """The test line of test.sh and of every candidate run (per-test result lines: -rA)."""
    args = ["python", "-m", "pytest", "-rA", "--tb=short", "-p", "no:cacheprovider", *pytest_args, *tests]
    return " ".join(shlex.quote(a) for a in args)


@dataclass
class SuiteRun:
    statuses: dict[str, str]
    log: str
    seconds: float
    timed_out: bool


class Container:
    """One long-lived container of the environment image with the original tree in /testbed."""

    def __init__(self, image: str, files: dict[str, bytes]) -> None:
        self.name = f"trialbook-pool-run-{uuid.uuid4().hex[:12]}"
        subprocess.run(
            ["docker", "run", "-d", "--rm", "--name", self.name, "--network", "none", image, "sleep", "infinity"],
            capture_output=True,
            check=True,
        )
        self.put(files)

    def put(self, files: dict[str, bytes]) -> None:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for rel, data in files.items():
                info = tarfile.TarInfo(rel)
                info.size = len(data)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(data))
        subprocess.run(
            ["docker", "exec", "-i", self.name, "tar", "-x", "-C", REPO_DIR, "-f", "-"],
            input=buf.getvalue(),
            capture_output=True,
            check=True,
        )

    def run(self, command: str, timeout: float) -> SuiteRun:
        t0 = time.monotonic()
        script = f"cd {REPO_DIR} && timeout -s KILL {int(timeout)} {command}"
        done = subprocess.run(
            ["docker", "exec", self.name, "bash", "-c", script], capture_output=True, check=False, timeout=timeout + 60
        )
        log = (done.stdout + done.stderr).decode(errors="replace")
        statuses, _ = parse_status_map(log, None)
        return SuiteRun(statuses, log, time.monotonic() - t0, done.returncode == 137)

    def close(self) -> None:
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, check=False)


def failure_excerpt(log: str, tests: list[str], max_lines: int = 40) -> str:
    """The first failing test's block of pytest's FAILURES/ERRORS section (at most `max_lines` lines)."""
    lines = log.splitlines()
    inside, block, name = False, list[str](), ""
    for line in lines:
        if FAILURES.match(line):
            inside = True
            continue
        if inside and SECTION_END.match(line):
            break
        if not inside:
            continue
        head = BLOCK.match(line)
        if head:
            if block:
                break
            name = head.group(1)
            continue
        if name:
            block.append(line)
    if not block:
        return ""
    cut = block[:max_lines] + (["..."] if len(block) > max_lines else [])
    return f"{name}\n" + "\n".join(cut).rstrip()


def problem_statement(repo: str, failing: list[str], excerpt: str, shown: int = 10) -> str:
    """An issue written from the failing tests' output (no model)."""
    listed = "\n".join(f"- `{t}`" for t in failing[:shown])
    more = f"\n- ... and {len(failing) - shown} more" if len(failing) > shown else ""
    parts = [
        f"Something in `{repo}` is broken: {len(failing)} of its tests fail that passed before.",
        "",
        f"Failing tests:\n{listed}{more}",
    ]
    if excerpt:
        parts += ["", "The first failure:", "", "```", excerpt, "```"]
    parts += [
        "",
        "Find the cause in the library's code and fix it, so that these tests pass again and the others still pass."
        " Do not change the tests.",
        "",
    ]
    return "\n".join(parts)

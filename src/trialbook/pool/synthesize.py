"""`tasks synthesize`: bug tasks made from a repository's own code (procedural changes, pool/mutate.py).

Order: clone the repository at the commit; build its environment image (pool/images.py); run its tests once on the
original code (the baseline: tests that fail there are never listed); then, in one container, each candidate: write
the changed file, run the suite, write the original back. A candidate is kept when some baseline-passing tests fail
with it (FAIL_TO_PASS; the other baseline-passing tests that still pass are PASS_TO_PASS), unless an earlier kept
candidate failed the same tests. Each kept one gets its image (the buggy tree in a one-commit repository), a leak scan
of that image, and a task folder in the layout `tasks from-swebench` writes: the reverse change is the reference
solution. `DIR/synthesize.json` keeps every candidate's line (kept, or why dropped) and the timings.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.pool import images
from trialbook.pool import suite as runner
from trialbook.pool.mutate import Mutation, candidates, unified_diff
from trialbook.pool.profiles import Profile, profile_for
from trialbook.result_types import Result, optional, to_json
from trialbook.tasks.swebench.build_images import Builder, BuildFailed
from trialbook.tasks.swebench.generate import build_solve_sh

REPORT = "synthesize.json"
BREAKS_SUITE = 0.5  # a candidate failing more than this share of the passing tests breaks the suite: dropped
DROP_REASONS = ("no_test_fails", "same_failing_tests", "breaks_suite", "timeout", "image_failed", "leak")


@dataclass(frozen=True)
class CandidateLine(Result):
    key: str  # path:line:kind
    kind: str
    function: str
    status: str  # kept, or one of DROP_REASONS
    seconds: float
    failing: int = 0  # baseline-passing tests that fail with the change
    task_id: str | None = optional()
    leak_scan: str | None = optional()


@dataclass(frozen=True)
class Synthesized(Result):
    out: str
    repo: str
    commit: str
    env_image: str
    env_build_s: float
    baseline_passing: int
    baseline_failing: int
    baseline_s: float
    tried: int
    kept: list[str]
    dropped: dict[str, int]
    seconds: float
    seconds_per_task: float | None
    candidates: list[CandidateLine] = field(default_factory=list)


def parse_source(spec: str) -> tuple[Path, str]:
    """`REPO_DIR[@COMMIT]` -> (folder, commit or "HEAD")."""
    path, _, commit = spec.partition("@") if "@" in spec and not Path(spec).exists() else (spec, "", "")
    folder = Path(path)
    if not folder.is_dir():
        raise UserError(f"{path} is not a folder (a git repository, optionally @COMMIT)")
    return folder, commit or "HEAD"


def repo_name(folder: Path, given: str | None) -> str:
    if given:
        if not re.fullmatch(r"[\w.-]+/[\w.-]+", given):
            raise UserError(f"--repo must be OWNER/NAME, got {given!r}")
        return given
    stem = folder.resolve().name.removesuffix(".git")
    owner, sep, name = stem.partition("__")
    return f"{owner}/{name}" if sep and name else f"local/{stem}"


def checkout(folder: Path, commit: str, dest: Path) -> str:
    """Clone `folder` at `commit` into `dest`; the full commit id."""
    steps = [["clone", "-q", "--no-checkout", str(folder.resolve()), str(dest)]]
    steps.append(["-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "-q", commit])
    for args in steps:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            reason = (done.stderr.strip().splitlines() or ["git failed"])[-1]
            raise UserError(f"{folder}@{commit}: {reason}")
    sha = subprocess.run(["git", "-C", str(dest), "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
    return sha.stdout.strip()


def read_exclusions(path: Path | None, repo: str) -> set[str]:
    """The exclusion list's entries for `repo`: `path` or `path::function` (lines `OWNER/NAME:ENTRY`, `#` comments;
    a line `OWNER/NAME` alone excludes the whole repository)."""
    if path is None:
        return set()
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"--exclude {path}: {exc.strerror or exc}") from None
    out: set[str] = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        name, _, entry = line.partition(":")
        if name != repo:
            continue
        if not entry:
            raise UserError(f"{repo} is excluded as a whole by {path}: it overlaps the evaluation set")
        out.add(entry)
    return out


def task_id_of(repo: str, m: Mutation) -> str:
    digest = hashlib.sha256(f"{repo}\0{m.path}\0{m.mutated}".encode()).hexdigest()
    return f"{repo.replace('/', '__')}-{int(digest[:12], 16) % 10**8:08d}"


def synth_test_sh(task_id: str, profile: Profile) -> str:
    tests = " ".join(profile.tests)
    return "\n".join(
        [
            "#!/bin/bash",
            f"# Verifier for {task_id} (synthesized by `trialbook tasks synthesize`): the repository's own tests, the",
            "# test files restored first, one result line per test (-rA), graded per test from tests/config.json.",
            "set -uxo pipefail",
            f"cd {images.REPO_DIR} || exit 1",
            f"git checkout -q HEAD -- {tests}",
            f"git clean -fdqx -- {tests}",
            runner.suite_command(profile.tests, profile.pytest_args),
            "",
        ]
    )


def solve_sh(patch: str) -> str:
    return build_solve_sh(patch, "the reference fix (the reverse of the synthesized change)")


def task_toml(repo: str, task_id: str, commit: str, image: str, m: Mutation) -> str:
    q = json.dumps
    return "\n".join(
        [
            "# Synthesized bug task (`trialbook tasks synthesize`): the repository with one procedural change.",
            "[metadata]",
            f"repo = {q(repo)}",
            f"instance_id = {q(task_id)}",
            f"base_commit = {q(commit)}",
            'source = "synthesized"',
            f"mutation = {q(m.kind)}",
            "",
            "[agent]",
            "timeout_sec = 1800.0",
            "",
            "[verifier]",
            "timeout_sec = 600.0",
            "",
            "[environment]",
            f"docker_image = {q(image)}",
            f"workdir = {q(images.REPO_DIR)}",
            "cpus = 1",
            "memory_mb = 2048",
            "",
        ]
    )


def write_task_folder(folder: Path, files: dict[str, str]) -> None:
    (folder / "environment").mkdir(parents=True, exist_ok=True)  # the image is prebuilt: no Dockerfile
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.endswith(".sh"):
            path.chmod(0o755)


def _merged(out: Path, report: Synthesized) -> dict[str, object]:
    """`out`'s report: earlier runs' entries of other repositories kept, this repository's replaced."""
    earlier: list[dict[str, object]] = []
    if (out / REPORT).is_file():
        try:
            earlier = json.loads((out / REPORT).read_text()).get("repositories", [])
        except (ValueError, AttributeError):
            earlier = []
    kept = [r for r in earlier if isinstance(r, dict) and r.get("repo") != report.repo]
    return {"repositories": [*kept, to_json(report)]}


@dataclass(frozen=True)
class SynthesisOptions:
    """What `synthesize` tries and how each candidate's tests run (`tasks synthesize`'s options)."""

    repo: str | None = None  # OWNER/NAME (default: from a folder named OWNER__NAME[.git])
    seed: int = 0  # of the candidates' order
    limit: int = 50  # candidates tried at most
    tests: list[str] | None = None  # test paths the suite runs (default: the repository's profile)
    pip: list[str] | None = None  # test dependencies installed beside it
    pytest_args: list[str] | None = None
    exclude: Path | None = None  # an exclusion list (`tasks overlap --write-exclusions`)


def synthesize(source: str, out: Path, progress: Callable[[str], None] | None = None, **options: Any) -> Synthesized:
    """`options`: SynthesisOptions's fields. `progress`: called with one line per candidate run (the CLI prints them
    on stderr)."""
    o = SynthesisOptions(**options)
    repo, seed, limit, tests, pip, pytest_args, exclude = (
        o.repo, o.seed, o.limit, o.tests, o.pip, o.pytest_args, o.exclude
    )  # fmt: skip
    t_start = time.monotonic()
    folder, commit = parse_source(source)
    name = repo_name(folder, repo)
    profile = profile_for(name, tests, pip, pytest_args)
    excluded = read_exclusions(exclude, name)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a folder")
    with tempfile.TemporaryDirectory(prefix="tb-pool-") as tmp:
        sha = checkout(folder, commit, Path(tmp) / "repo")
        root = Path(tmp) / "repo"
        missing = [t for t in profile.tests if not (root / t).exists()]
        if missing:
            raise UserError(f"{name}@{sha[:12]} has no {missing[0]} (name its tests with --test)")
        files = images.tree_files(root)
        todo = candidates(root, profile.tests, seed, limit, excluded)
    try:
        builder = Builder()
        t0 = time.monotonic()
        env = images.ensure_env(builder, files, profile.pip, name, sha)
    except BuildFailed as exc:
        raise UserError(f"environment image of {name}: {exc}") from None
    env_s = time.monotonic() - t0
    command = runner.suite_command(profile.tests, profile.pytest_args)
    box = runner.Container(env, files)
    lines: list[CandidateLine] = []
    kept: list[tuple[Mutation, str, list[str], list[str], str]] = []
    try:
        base = box.run(command, 1800)
        passing = sorted(t for t, s in base.statuses.items() if s in runner.PASSING)
        if not passing:
            tail = " | ".join(base.log.strip().splitlines()[-3:])
            raise UserError(f"no test of {name} passes on the original code: {tail[-300:]}")
        limit_s = max(120.0, 10 * base.seconds)  # generous: a busy machine slows every run alike
        seen: set[frozenset[str]] = set()
        for m in todo:
            box.put({m.path: m.mutated.encode()})
            try:
                run = box.run(command, limit_s)
            finally:
                box.put({m.path: m.original.encode()})
            failing = [t for t in passing if run.statuses.get(t) not in runner.PASSING]
            status = "kept"
            if run.timed_out:
                status = "timeout"
            elif not failing:
                status = "no_test_fails"
            elif len(failing) > BREAKS_SUITE * len(passing):
                status = "breaks_suite"
            elif frozenset(failing) in seen:
                status = "same_failing_tests"
            line = CandidateLine(m.key, m.kind, m.function, status, round(run.seconds, 1), len(failing))
            if status == "kept":
                seen.add(frozenset(failing))
                p2p = [t for t in passing if t not in set(failing)]
                excerpt = runner.failure_excerpt(run.log, failing)
                kept.append((m, task_id_of(name, m), failing, p2p, excerpt))
            lines.append(line)
            if progress is not None:
                progress(f"{len(lines)}/{len(todo)} {m.key}: {status} ({run.seconds:.1f} s)")
    finally:
        box.close()
    written = _write_all(builder, env, (name, sha), profile, files, kept, lines, out)
    total = time.monotonic() - t_start
    dropped: dict[str, int] = {}
    for x in lines:
        if x.status != "kept":
            dropped[x.status] = dropped.get(x.status, 0) + 1
    report = Synthesized(
        out=str(out),
        repo=name,
        commit=sha,
        env_image=env,
        env_build_s=round(env_s, 1),
        baseline_passing=len(passing),
        baseline_failing=sum(1 for s in base.statuses.values() if s not in runner.PASSING),
        baseline_s=round(base.seconds, 1),
        tried=len(lines),
        kept=written,
        dropped=dropped,
        seconds=round(total, 1),
        seconds_per_task=round(total / len(written), 1) if written else None,
        candidates=lines,
    )
    (out / REPORT).write_text(json.dumps(_merged(out, report), indent=1) + "\n")
    return report


def _write_all(
    builder: Builder,
    env: str,
    at: tuple[str, str],
    profile: Profile,
    files: dict[str, bytes],
    kept: list[tuple[Mutation, str, list[str], list[str], str]],
    lines: list[CandidateLine],
    out: Path,
) -> list[str]:
    """Build, leak-scan and write each kept candidate's task (of repository `at` = (name, commit)); `lines` updated in
    place with the outcome."""
    name, sha = at
    out.mkdir(parents=True, exist_ok=True)
    by_key = {x.key: i for i, x in enumerate(lines)}
    written = []
    for m, task_id, f2p, p2p, excerpt in kept:
        i = by_key[m.key]
        try:
            image = images.ensure_task(builder, env, task_id, {**files, m.path: m.mutated.encode()})
        except BuildFailed as exc:
            lines[i] = _with(lines[i], status="image_failed", leak_scan=str(exc)[:200])
            continue
        scan = images.leak_scan(image, m.original.encode())
        if scan != "clean":
            lines[i] = _with(lines[i], status="leak", leak_scan=scan)
            continue
        config = {"instance_id": task_id, "repo": name, "base_commit": sha, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}
        task_files = {
            "instruction.md": runner.problem_statement(name, f2p, excerpt),
            "task.toml": task_toml(name, task_id, sha, image, m),
            "tests/config.json": json.dumps(config, indent=1) + "\n",
            "tests/test.sh": synth_test_sh(task_id, profile),
            "solution/solve.sh": solve_sh(unified_diff(m.path, m.mutated, m.original)),
        }
        tmp = Path(tempfile.mkdtemp(prefix=f".{task_id}.", dir=out))
        write_task_folder(tmp, task_files)
        if (out / task_id).exists():
            shutil.rmtree(out / task_id)
        tmp.rename(out / task_id)
        lines[i] = _with(lines[i], task_id=task_id, leak_scan=scan)
        written.append(task_id)
    return written


def _with(line: CandidateLine, **changes: object) -> CandidateLine:
    import dataclasses

    return dataclasses.replace(line, **changes)  # type: ignore[arg-type]

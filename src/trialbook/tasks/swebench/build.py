"""`tasks from-swebench --build`: task folders whose images are built here from source.

Order: read and check everything (ids, versions, sources, commits) so bad input exits 2 before any
build; build environment and instance images in parallel (`jobs` threads; an image shared by
several instances is built once); write the task folders of the built instances into a temporary
folder next to `out` and move them in at the end. An instance whose image cannot be built is an
`infra_error` line with the reason; one that cannot be built here at all is a `refused` line.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trialbook.errors import UserError
from trialbook.result_types import Result, optional, to_json
from trialbook.tasks.swebench.build_images import Builder, BuildFailed, base_tag, key_plan
from trialbook.tasks.swebench.build_plan import (
    DEFAULT_EXCLUDE_NEWER,
    PYTHON_RULE,
    BuildPlan,
    local_source,
    make_plan,
    refusal,
    upstream_source,
)
from trialbook.tasks.swebench.generate import image_for, read_instance_rows, skip_reason, write_task
from trialbook.tasks.swebench.lockfile import (
    LOCK_FILE,
    LockError,
    changes,
    lock_text,
    make_lock,
    read_environment,
    read_lock,
)
from trialbook.tasks.swebench.versions import VERSIONS

REPORT = "swebench-build.json"


@dataclass(frozen=True)
class BuildLine(Result):
    """One instance of a build: `built` with its images, sizes (MB) and build times (s), or `skipped`,
    `refused` or `infra_error` with the reason."""

    task_id: str
    status: str
    reason: str | None = optional()
    repo: str | None = optional()
    version: str | None = optional()
    image: str | None = optional()
    env_image: str | None = optional()
    seconds: float | None = optional()
    env_build_s: float | None = optional()
    instance_build_s: float | None = optional()
    env_mb: float | None = optional()
    image_mb: float | None = optional()
    official_image: str | None = optional()  # --image official: the official name the image is tagged with
    python: str | None = optional()  # the interpreter in the image (the lock's)
    lock: str | None = optional()  # "written"; from a lock: "same" or "changed"
    lock_changes: list[str] | None = optional()  # what a rebuild from a lock changed (then: an image variant)
    locked_image: str | None = optional()  # the image the lock was taken from (for validate --image-variant)


@dataclass(frozen=True)
class TasksBuilt(Result):
    out: str
    written: list[str]  # task ids
    skipped: list[BuildLine]  # every line not built
    instances: list[BuildLine]
    leaks: dict[str, Any] | None = optional()  # the scan of the images built (cli/tasks.py: verify/leak_scan.py)


def upstream_cache() -> Path:
    """Where repositories fetched from upstream are kept between builds."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "trialbook" / "swebench-repos"


def _select(rows: list[dict[str, Any]], ids: list[str] | None, source: Path) -> list[dict[str, Any]]:
    if not ids:
        return rows
    known = {r["instance_id"] for r in rows}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise UserError(f"unknown instance id {unknown[0]!r}: not in {source} ({len(unknown)} unknown --task ids)")
    wanted = set(ids)
    return [r for r in rows if r["instance_id"] in wanted]


def plan_all(
    rows: list[dict[str, Any]],
    repos: Path | None,
    exclude_newer: str,
    layout: str = "venv",
    from_lock: Path | None = None,
    every: list[dict[str, Any]] | None = None,
) -> tuple[list[BuildPlan], list[BuildLine]]:
    """Plans for the buildable instances, and one skipped/refused line for each other one; `every`: all rows of the
    instances file (a version's environment file is read at one commit for all its instances: make_plan)."""
    if repos is not None and not repos.is_dir():
        raise UserError(f"--repos {repos} is not a folder")
    plans, lines = [], []
    for inst in rows:
        version = inst.get("version") or VERSIONS.get(inst["instance_id"])
        reason = skip_reason(inst, version)
        if reason is not None:
            lines.append(BuildLine(inst["instance_id"], "skipped", reason))
            continue
        refused = refusal(inst, version)
        if refused is not None:
            lines.append(BuildLine(inst["instance_id"], "refused", refused))
            continue
        assert version is not None  # skip_reason/refusal rule out an unknown version
        source = local_source(repos, inst) if repos is not None else upstream_source(upstream_cache(), inst)
        try:
            plan = make_plan(inst, version, source, exclude_newer, every or rows)
        except ValueError as exc:  # e.g. the spec's requirements file is not in the repository
            lines.append(BuildLine(inst["instance_id"], "infra_error", str(exc)))
            continue
        plan.layout = layout
        if layout == "official":
            plan.extra.pop("httpbin", None)  # the published images have no httpbin: the same test.sh as theirs
        if from_lock is not None:
            plan.lock = read_lock(from_lock, plan.instance_id)
            if plan.lock.get("suite") != plan.suite:
                on = plan.lock.get("suite")
                raise UserError(f"--from-lock: {plan.instance_id}'s lock is on {on}, its spec on {plan.suite}")
            plan.exclude_newer = str(plan.lock.get("resolved_as_of") or exclude_newer)
        key_plan(plan)
        plans.append(plan)
    return plans, lines


def _lock_of(builder: Builder, plan: BuildPlan) -> dict[str, Any]:
    base = base_tag(plan.suite)
    env = read_environment(builder.client, plan.inst_tag, plan.venv)
    return make_lock(plan.instance_id, plan.suite, plan.layout, (base, builder.image_id(base)), plan.exclude_newer, env)


def _build_one(builder: Builder, plan: BuildPlan, registry: str | None, locks: dict[str, dict[str, Any]]) -> BuildLine:
    t0 = time.monotonic()
    official = image_for(plan.instance_id, registry) if plan.layout == "official" else None
    try:
        builder.ensure_instance(plan)
        if official is not None:
            builder.tag(plan.inst_tag, official)
        lock = locks[plan.instance_id] = _lock_of(builder, plan)
    except (BuildFailed, LockError) as exc:
        return BuildLine(plan.instance_id, "infra_error", f"image build failed: {exc}")
    diff = changes(plan.lock, lock) if plan.lock is not None else None
    return BuildLine(
        task_id=plan.instance_id,
        status="built",
        repo=plan.inst["repo"],
        version=plan.version,
        image=plan.inst_tag,
        env_image=plan.env_tag,
        seconds=round(time.monotonic() - t0, 1),
        env_build_s=round(builder.built.get(plan.env_tag, 0.0), 1),
        instance_build_s=round(builder.built.get(plan.inst_tag, 0.0), 1),
        env_mb=builder.size_mb(plan.env_tag),
        image_mb=builder.size_mb(plan.inst_tag),
        official_image=official,
        python=str(lock["python"]),
        lock="written" if diff is None else ("changed" if diff else "same"),
        lock_changes=diff or None,
        locked_image=plan.lock.get("image") if diff and plan.lock else None,
    )


def _merged_report(out: Path, lines: list[BuildLine], exclude_newer: str) -> dict[str, Any]:
    """The report of `out`: earlier builds' lines, replaced by this build's for the same instances."""
    earlier: list[dict[str, Any]] = []
    if (out / REPORT).is_file():
        try:
            earlier = json.loads((out / REPORT).read_text()).get("instances", [])
        except (ValueError, AttributeError):
            earlier = []
    ids = {x.task_id for x in lines}
    merged = [x for x in earlier if x.get("task_id") not in ids] + to_json(lines)
    return {"exclude_newer": exclude_newer, "instances": sorted(merged, key=lambda x: x["task_id"])}


def _move_in(tmp: Path, out: Path) -> None:
    """Move the finished task folders into `out` (a fresh `out` is one rename)."""
    if not out.exists():
        tmp.rename(out)
        return
    for item in tmp.iterdir():
        dest = out / item.name
        if dest.is_dir():
            shutil.rmtree(dest)
        elif dest.exists():
            dest.unlink()
        item.rename(dest)
    tmp.rmdir()


@dataclass(frozen=True)
class BuildOptions:
    """How `build_tasks` builds: the repositories' clones (`repos`, else fetched), `jobs` images at once, packages
    no newer than `exclude_newer`, the image `layout` (and `registry`), or exactly from the lock files of
    `from_lock`."""

    repos: Path | None = None
    jobs: int = 1
    exclude_newer: str = DEFAULT_EXCLUDE_NEWER
    layout: str = "venv"
    registry: str | None = None
    from_lock: Path | None = None


def build_tasks(instances: Path, out: Path, ids: list[str] | None = None, **options: Any) -> TasksBuilt:
    """`options`: BuildOptions's fields. `layout` "official": images in the published sweb.eval layout, tagged with
    their official names (under `registry` when given) and task folders exactly as `write_tasks` writes them for
    those names."""
    o = BuildOptions(**options)
    repos, jobs, exclude_newer, layout, registry, from_lock = (
        o.repos, o.jobs, o.exclude_newer, o.layout, o.registry, o.from_lock
    )  # fmt: skip
    every = read_instance_rows(instances)
    rows = _select(every, ids, instances)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} exists and is not a folder")
    if from_lock is not None and not from_lock.is_dir():
        raise UserError(f"--from-lock {from_lock} is not a folder")
    plans, lines = plan_all(rows, repos, exclude_newer, layout, from_lock, every)
    try:
        builder = Builder() if plans else None
    except BuildFailed as exc:
        raise UserError(str(exc)) from None
    results: list[BuildLine] = []
    locks: dict[str, dict[str, Any]] = {}
    if builder is not None:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(lambda p: _build_one(builder, p, registry, locks), plans))
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        by_id = {p.instance_id: p for p in plans}
        for r in results:
            if r.status == "built":
                plan = by_id[r.task_id]
                official = plan.layout == "official"
                wanted = str(plan.specs["python"])
                asked = {"python_asked": wanted, "python_rule": PYTHON_RULE}
                if str(r.python).startswith(f"{wanted}."):
                    asked = {}
                write_task(
                    plan.inst,
                    plan.version,
                    tmp / plan.instance_id,
                    built_image=None if official else plan.inst_tag,
                    httpbin=bool(plan.extra.get("httpbin")),
                    unroutable=bool(plan.extra.get("unroutable_network")),
                    official_image=r.official_image,
                    metadata={"python": str(r.python), **asked, "image_layout": plan.layout},
                )
                noted = {k: plan.extra[k] for k in ("conda_left_out", "environment_commit") if plan.extra.get(k)}
                lock = {**locks[plan.instance_id], **asked, **noted, "image": plan.inst_tag}
                (tmp / plan.instance_id / LOCK_FILE).write_text(lock_text(lock))
        lines = results + lines
        (tmp / REPORT).write_text(json.dumps(_merged_report(out, lines, exclude_newer), indent=1) + "\n")
        _move_in(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return TasksBuilt(
        out=str(out),
        written=[r.task_id for r in lines if r.status == "built"],
        skipped=[r for r in lines if r.status != "built"],
        instances=lines,
    )

"""`tasks scan-leaks` / `validate --leaks`: each task's image scanned for its own answer (verify/leaks.py).

One container per image, read-only, with no network, as root (it reads every file), kept alive by a sleep; the scan
runs in it as one exec and the hit blobs are named in a second; the container is removed whatever happens.
"""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from docker.errors import APIError, DockerException

from trialbook.sandbox import Backend
from trialbook.sandbox.box import SandboxError
from trialbook.sandbox.docker import LABEL_RUN, LABEL_TASK
from trialbook.sandbox.readonly import read_only
from trialbook.tasks import TaskSpec, load_tasks
from trialbook.verify import leaks
from trialbook.verify.leaks import LeakScan, TaskLeaks

RUN_LABEL = "leak-scan"
DEFAULT_WORKDIR = "/testbed"


def scan_image(engine: Backend, image: str, workdir: str, patterns: list[str], task_id: str = "") -> TaskLeaks:
    """The scan of one image for `patterns` (the solution's distinctive lines)."""
    start = time.monotonic()
    with read_only(engine, image, {LABEL_RUN: RUN_LABEL, LABEL_TASK: task_id}, leaks.SCAN_DIR) as look:
        env = {
            "TB_LEAK_PATTERNS": "\n".join(patterns),
            "TB_LEAK_WORKDIR": workdir,
            "TB_LEAK_ARCHIVES": leaks.ARCHIVE_READER,
        }
        found = leaks.parse(look(leaks.scan_script(), env))
        lines, hits = leaks.judge(patterns, found)
        blobs = sorted(where for kind, where, _ in hits if kind == "git")
        named = {}
        if blobs:
            where = look(leaks.WHERE_SCRIPT, {"TB_LEAK_WORKDIR": workdir, "TB_LEAK_BLOBS": " ".join(blobs)})
            named = leaks.describe_blobs(where)
    if not lines:
        why = f"each of the {len(patterns)} line(s) the solution adds is in the repository at HEAD already"
        return TaskLeaks(task_id=task_id, verdict="not_scanned", image=image, reason=why, seconds=leaks.elapsed(start))
    return TaskLeaks(
        task_id=task_id, verdict="leaky" if hits else "clean", image=image, lines=len(lines),
        threshold=leaks.threshold(len(lines)), hits=leaks.hit_list(hits, named), notes=found.notes,
        seconds=leaks.elapsed(start),
    )  # fmt: skip


def scan_task(engine: Backend, task: TaskSpec) -> TaskLeaks:
    """One task: its image (built from its Dockerfile when it names none) scanned for its solution."""
    if not task.solution_dir.is_dir():
        return TaskLeaks(task_id=task.task_id, verdict="not_scanned", reason="the task has no solution/ folder")
    patterns = leaks.gold_lines(task.solution_dir)
    if not patterns:
        why = "the solution adds no distinctive line (no diff, no here-document of 12+ characters a line)"
        return TaskLeaks(task_id=task.task_id, verdict="not_scanned", reason=why)
    try:
        ref, _ = engine.ensure_image(
            task.task_id, task.image, task.dockerfile.parent, task.environment_hash, RUN_LABEL, task.allow_network
        )
        workdir = task.workdir or engine.image_workdir(ref) or DEFAULT_WORKDIR
        return scan_image(engine, ref, workdir, patterns, task.task_id)
    except (SandboxError, APIError, DockerException) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return TaskLeaks(task_id=task.task_id, verdict="not_scanned", reason=f"image not scanned: {first}")


def scan_tasks(engine: Backend, tasks_dir: Path, only: list[str] | None = None, jobs: int = 2) -> LeakScan:
    """Every task folder under `tasks_dir` (or those in `only`), `jobs` images at a time."""
    specs, errors = load_tasks(tasks_dir, only)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rows = list(pool.map(lambda t: scan_task(engine, t), specs))
    rows += [TaskLeaks(task_id=e.task_id, verdict="not_scanned", reason=f"invalid task: {e.message}") for e in errors]
    rows.sort(key=lambda r: r.task_id)
    return LeakScan(tasks=rows, verdicts=dict(Counter(r.verdict for r in rows)))

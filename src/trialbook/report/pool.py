"""Human output for `tasks synthesize` and `tasks overlap` (JSON: the results' `to_json()`)."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from trialbook.report.layout import line, table

if TYPE_CHECKING:  # synthesize imports docker and swebench's parsers: only its command loads them
    from trialbook.pool.overlap import Overlap
    from trialbook.pool.rebench import RebenchBuilt
    from trialbook.pool.synthesize import Synthesized

TOP = 20  # overlapping pairs shown (the JSON has them all)


def print_synthesized(r: Synthesized) -> None:
    line(f"{r.repo}@{r.commit[:12]}: kept {len(r.kept)} of {r.tried} candidates, wrote them to {r.out}", markup=False)
    line(
        f"environment {r.env_image} ({r.env_build_s:.0f} s to build); baseline: {r.baseline_passing} tests pass,"
        f" {r.baseline_failing} fail or skip, {r.baseline_s:.1f} s a run",
        markup=False,
    )
    per = f"{r.seconds_per_task:.1f} s per task" if r.seconds_per_task is not None else "no task kept"
    line(f"took {r.seconds:.0f} s in all, {per}", markup=False)
    kinds = sorted({c.kind for c in r.candidates})
    rows = []
    for kind in kinds:
        mine = [c for c in r.candidates if c.kind == kind]
        status = Counter(c.status for c in mine)
        dropped = ", ".join(f"{k} {n}" for k, n in sorted(status.items()) if k != "kept") or "-"
        rows.append([kind, str(len(mine)), str(status.get("kept", 0)), dropped])
    table(["change", "tried", "kept", "dropped (why)"], rows, title="candidates")


def print_overlap(r: Overlap) -> None:
    line(f"pool {r.pool} ({r.pool_tasks} tasks) against {r.eval} ({r.eval_tasks} tasks)", markup=False)
    line(f"repositories shared: {', '.join(r.repos_shared) or 'none'}", markup=False)
    counts = ", ".join(f"{k} {n}" for k, n in r.counts.items())
    line(f"overlapping pairs: {len(r.pairs)} ({counts})", markup=False)
    line(f"highest statement similarity: {r.max_similarity:.2f} (flagged from {r.threshold:.2f})", markup=False)
    line(
        f"eval tasks in the overlap: {len(r.in_overlap)}, out of it: {len(r.out_of_overlap)};"
        f" pool tasks in it: {len(r.pool_in_overlap)}",
        markup=False,
    )
    if r.pairs:
        rows = [[p.pool, p.eval, ", ".join(p.kinds), "; ".join(p.detail[:3])] for p in r.pairs[:TOP]]
        more = f" (first {TOP} of {len(r.pairs)})" if len(r.pairs) > TOP else ""
        table(["pool task", "eval task", "overlap", "what"], rows, title=f"overlapping pairs{more}")


def print_rebench(r: RebenchBuilt) -> None:
    line(f"built and wrote {len(r.written)} task folders to {r.out}", markup=False)
    for x in r.rows:
        if x.status != "built":
            line(f"{x.status}: {x.task_id}: {x.reason}", markup=False)
    built = [x for x in r.rows if x.status == "built"]
    if built:
        rows = [[x.task_id, str(x.image), str(x.python), f"{x.seconds or 0:.0f}"] for x in built]
        table(["instance", "image", "python", "build s"], rows, title="built")

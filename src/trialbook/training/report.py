"""`train report`: a training run's rollouts by weight-version bucket, by pass, by encounter, and its stalls.

Rates are resolved / judged trajectories (records.is_resolved); bucket intervals are task-cluster
95% intervals (trajectories of one task in a bucket are one cluster), see `cluster_ci`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson
from scipy.special import stdtrit

from trialbook.errors import UserError
from trialbook.ledger import queries
from trialbook.ledger.store import Ledger
from trialbook.training.encounters import encounter_table
from trialbook.training.ingest import load_steps
from trialbook.training.load import TrainData, load_trajectories
from trialbook.training.stalls import stall_report

# Failure shares reported per bucket (percent of the bucket's trajectories); agent_timeout is the seed's CBF.
SHARE_KINDS = ("agent_timeout", "p2p_regression", "format_error", "context_overflow", "incomplete")


def _pct(part: float, whole: float) -> float | None:
    return round(100.0 * part / whole, 2) if whole else None


def cluster_ci(resolved: np.ndarray, judged: np.ndarray, cluster: np.ndarray, n_groups: int) -> list[Any]:
    """Per group g: ratio p = sum resolved / sum judged with a task-cluster (CR1) 95% t interval.

    resolved/judged are per-(group, task) sums and `cluster` their group index. Var(p) =
    C/(C-1) * sum_i (y_i - p n_i)^2 / N^2 over the C tasks of the group (statsmodels' cluster SE of a mean).
    """
    y = np.bincount(cluster, weights=resolved, minlength=n_groups)
    n = np.bincount(cluster, weights=judged, minlength=n_groups)
    clusters = np.bincount(cluster, weights=judged > 0, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = y / n
        e2 = np.bincount(cluster, weights=(resolved - p[cluster] * judged) ** 2, minlength=n_groups)
        se = np.sqrt(clusters / (clusters - 1) * e2) / n
    out: list[Any] = []
    for g in range(n_groups):
        if clusters[g] < 2:
            out.append(None)
            continue
        half = stdtrit(clusters[g] - 1, 0.975) * se[g]
        out.append([round(100 * max(0.0, p[g] - half), 2), round(100 * min(1.0, p[g] + half), 2)])
    return out


def _metric_ranges(steps: list[dict[str, Any]], lo: int, hi: int) -> dict[str, list[float]]:
    ranges: dict[str, list[float]] = {}
    for s in steps:
        if lo <= s["step"] <= hi:
            for name, value in s["metrics"].items():
                r = ranges.setdefault(name, [value, value])
                r[0], r[1] = min(r[0], value), max(r[1], value)
    return {k: [round(v[0], 4), round(v[1], 4)] for k, v in ranges.items()}


def bucket_table(data: TrainData, bucket: int, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    d = data.subset(data.wv >= 0)
    if not d.trajectories:
        return []
    b = d.wv // bucket
    ids, inv = np.unique(b, return_inverse=True)
    ntask = len(d.task_names)
    cell, cell_inv = np.unique(inv.astype(np.int64) * ntask + d.task, return_inverse=True)
    cell_res = np.bincount(cell_inv, weights=d.n * d.resolved)
    cell_jud = np.bincount(cell_inv, weights=d.n * d.graded)
    cis = cluster_ci(cell_res, cell_jud, (cell // ntask).astype(np.int64), len(ids))
    count = np.bincount(inv, weights=d.n, minlength=len(ids))
    judged = np.bincount(inv, weights=d.n * d.graded, minlength=len(ids))
    resolved = np.bincount(inv, weights=d.n * d.resolved, minlength=len(ids))
    shares = {
        k: np.bincount(inv, weights=d.n * (d.p2p if k == "p2p_regression" else d.outcome_mask(k)), minlength=len(ids))
        for k in SHARE_KINDS
    }
    rows = []
    for i, bid in enumerate(ids):
        lo, hi = int(bid) * bucket, int(bid) * bucket + bucket - 1
        rows.append(
            {
                "wv_from": lo,
                "wv_to": hi,
                "trajectories": int(count[i]),
                "judged": int(judged[i]),
                "pass_pct": _pct(resolved[i], judged[i]),
                "ci_pct": cis[i],
                "outcome_pct": {k: _pct(v[i], count[i]) for k, v in shares.items()},
                "metrics": _metric_ranges(steps, lo, hi),
            }
        )
    return rows


def pass_table(data: TrainData) -> list[dict[str, Any]]:
    d = data.subset(data.epoch >= 0)
    rows = []
    for e in np.unique(d.epoch):
        m = d.epoch == e
        judged = d.count(m & d.graded)
        rows.append(
            {
                "pass": int(e),
                "tasks": int(len(np.unique(d.task[m]))),
                "trajectories": d.count(m),
                "judged": judged,
                "pass_pct": _pct(d.count(m & d.resolved), judged),
            }
        )
    return rows


def read_task_list(source: str, ledger: Ledger) -> set[str]:
    """Task ids from a file (one per line, a JSON list, or JSONL with task_id/instance_id) or a run name."""
    path = Path(source)
    if not path.is_file():
        if source not in ledger.run_names():
            raise UserError(f"--eval-set {source}: neither a task-list file nor a run in the ledger")
        return queries.task_ids(ledger, ledger.get_run(source).id)
    text = path.read_text()
    try:
        value = orjson.loads(text)
        if isinstance(value, list):
            return {str(v) for v in value}
    except orjson.JSONDecodeError:
        pass
    ids = set()
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            obj = orjson.loads(line)
            line = obj.get("task_id") or obj.get("instance_id") or ""
        if line and not line.startswith("#"):
            ids.add(line)
    return ids


def _exclude(data: TrainData, repos: list[str]) -> tuple[TrainData, dict[str, int]]:
    dropped: dict[str, int] = {}
    keep = np.ones(len(data.n), dtype=bool)
    for repo in repos:
        if repo not in data.repo_names:
            raise UserError(f"--exclude-repo {repo}: no trajectories of that repo in this run")
        m = data.repo == data.repo_names.index(repo)
        dropped[repo] = data.count(m)
        keep &= ~m
    return (data.subset(keep) if repos else data), dropped


def train_report(
    ledger: Ledger,
    run_name: str,
    bucket: int = 5,
    exclude_repos: list[str] | None = None,
    gpus: int | None = None,
    eval_set: str | None = None,
) -> dict[str, Any]:
    if bucket < 1:
        raise UserError(f"--bucket must be at least 1, got {bucket}")
    if gpus is not None and gpus < 1:
        raise UserError(f"--gpus must be at least 1, got {gpus}")
    run = ledger.run(run_name)
    everything = load_trajectories(ledger, run["id"])
    if not everything.trajectories or not (everything.wv >= 0).any():
        raise UserError(f"run '{run_name}' has no training trajectories with 'wv' (import with --kind train)")
    eval_tasks = read_task_list(eval_set, ledger) if eval_set else None
    steps = load_steps(ledger, run["id"])
    data, dropped = _exclude(everything, exclude_repos or [])
    encounters, last = encounter_table(data)
    warnings = []
    overlap = None
    if eval_tasks is not None:
        pool = set(everything.task_names)
        overlap = {"eval_set": eval_set, "pool_tasks": len(pool), "overlap": len(pool & eval_tasks)}
        if overlap["overlap"]:
            warnings.append(
                f"{overlap['overlap']} of the {len(pool)} training tasks are in the evaluation set {eval_set}:"
                " gains on them are confounded with memorisation; judge the run on held-out tasks"
            )
    buckets = bucket_table(data, bucket, steps)
    if dropped:  # the same buckets with every repo, to show what the exclusion changes
        with_all = {b["wv_from"]: b["pass_pct"] for b in bucket_table(everything, bucket, [])}
        for b in buckets:
            b["pass_pct_all_repos"] = with_all.get(b["wv_from"])
    judged = data.count(data.graded)
    return {
        "run": run_name,
        "kind": run["kind"],
        "trajectories": data.trajectories,
        "judged": judged,
        "pass_pct": _pct(data.count(data.resolved), judged),
        "tasks": int(len(np.unique(data.task))),
        "steps": len(steps),
        "bucket": bucket,
        "excluded_repos": dropped,
        "buckets": buckets,
        "passes": pass_table(data),
        "encounters": encounters,
        "last_minus_first": last,
        "stalls": stall_report(everything, steps, gpus),
        "eval_overlap": overlap,
        "warnings": warnings,
    }

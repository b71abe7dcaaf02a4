"""`train report`: a training run's rollouts by weight-version bucket, by pass, by encounter, and its stalls.

Rates are resolved / judged trajectories (records.is_resolved), or with metric `reward` the mean
reward of the judged trajectories (in percent, as the rates are); bucket intervals are task-cluster
95% intervals (trajectories of one task in a bucket are one cluster: `stats.kernel.cluster_ratio_ci`).
Rendering is report/training.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger import queries
from trialbook.ledger.store import Ledger
from trialbook.stats.kernel import cluster_ratio_ci
from trialbook.stats.run_summaries import pct
from trialbook.stats.scores import check_metric
from trialbook.stats.selection import read_task_list, resolve_repos
from trialbook.training.encounters import encounter_table
from trialbook.training.hacking import hack_table
from trialbook.training.ingest import load_steps
from trialbook.training.load import TrainData, load_trajectories
from trialbook.training.report_types import TrainReport
from trialbook.training.stalls import stall_report
from trialbook.training.trajectories import token_audit

# Failure shares reported per bucket (percent of the bucket's trajectories); agent_timeout is shown as CBF.
SHARE_KINDS = ("agent_timeout", "p2p_regression", "format_error", "context_overflow", "incomplete")


def cluster_ci(resolved: np.ndarray, judged: np.ndarray, cluster: np.ndarray, n_groups: int) -> list[Any]:
    """Per group: the task-cluster 95% interval of resolved/judged in percent, clipped to [0, 100].

    resolved/judged are per-(group, task) sums and `cluster` their group index; None for a group
    with fewer than 2 judged tasks."""
    p, lo, hi = cluster_ratio_ci(resolved, judged, cluster, n_groups)
    return [
        None if np.isnan(lo[g]) else [round(100 * max(0.0, lo[g]), 2), round(100 * min(1.0, hi[g]), 2)]
        for g in range(n_groups)
    ]


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
    cell_res = np.bincount(cell_inv, weights=d.wins)
    cell_jud = np.bincount(cell_inv, weights=d.n * d.graded)
    cis = cluster_ci(cell_res, cell_jud, (cell // ntask).astype(np.int64), len(ids))
    count = np.bincount(inv, weights=d.n, minlength=len(ids))
    judged = np.bincount(inv, weights=d.n * d.graded, minlength=len(ids))
    resolved = np.bincount(inv, weights=d.wins, minlength=len(ids))
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
                "pass_pct": pct(resolved[i], judged[i]),
                "ci_pct": cis[i],
                "outcome_pct": {k: pct(v[i], count[i]) for k, v in shares.items()},
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
                "pass_pct": pct(d.score(m), judged),
            }
        )
    return rows


def eval_tasks(source: str, ledger: Ledger) -> set[str]:
    """Task ids of a task-list file (`stats.selection.read_task_list`) or of a run in the ledger."""
    path = Path(source)
    if path.is_file():
        return set(read_task_list(path))
    if source not in ledger.run_names():
        raise UserError(f"--eval-set {source}: neither a task-list file nor a run in the ledger")
    return queries.run_task_ids(ledger, ledger.get_run(source).id)


def _exclude(data: TrainData, wanted: list[str]) -> tuple[TrainData, dict[str, int]]:
    """Drop the trajectories of the named repos (`stats.selection.resolve_repos`: full or short names)."""
    if not wanted:
        return data, {}
    known = [r for r in data.repo_names if r]
    repos = resolve_repos(wanted, known, missing="no trajectories of that repo in this run")
    dropped: dict[str, int] = {}
    keep = np.ones(len(data.n), dtype=bool)
    for repo in repos:
        m = data.repo == data.repo_names.index(repo)
        dropped[repo] = data.count(m)
        keep &= ~m
    return data.subset(keep), dropped


def train_report(
    ledger: Ledger,
    run_name: str,
    bucket: int = 5,
    exclude_repos: list[str] | None = None,
    gpus: int | None = None,
    eval_set: str | None = None,
    metric: str = "resolved",
) -> TrainReport:
    metric = check_metric(metric)
    if bucket < 1:
        raise UserError(f"--bucket must be at least 1, got {bucket}")
    if gpus is not None and gpus < 1:
        raise UserError(f"--gpus must be at least 1, got {gpus}")
    run = ledger.get_run(run_name)
    everything = load_trajectories(ledger, run.id, metric)
    if not everything.trajectories or not (everything.wv >= 0).any():
        raise UserError(f"run '{run_name}' has no training trajectories with 'wv' (import with --kind train)")
    eval_ids = eval_tasks(eval_set, ledger) if eval_set else None
    steps = load_steps(ledger, run.id)
    data, dropped = _exclude(everything, exclude_repos or [])
    encounters, last = encounter_table(data)
    warnings = []
    overlap = None
    if eval_ids is not None:
        pool = set(everything.task_names)
        overlap = {"eval_set": eval_set, "pool_tasks": len(pool), "overlap": len(pool & eval_ids)}
        if overlap["overlap"]:
            warnings.append(
                f"{overlap['overlap']} of the {len(pool)} training tasks are in the evaluation set {eval_set}:"
                " gains on them are confounded with memorisation; judge the run on held-out tasks"
            )
    partial = data.count(data.partial)
    if metric == "resolved" and partial:
        warnings.append(
            f"partial rewards (0 < reward < 1) count as unresolved under --metric resolved: {partial} graded"
            " trajectories; `--metric reward` reports mean reward"
        )
    buckets = bucket_table(data, bucket, steps)
    if dropped:  # the same buckets with every repo, to show what the exclusion changes
        with_all = {b["wv_from"]: b["pass_pct"] for b in bucket_table(everything, bucket, [])}
        for b in buckets:
            b["pass_pct_all_repos"] = with_all.get(b["wv_from"])
    judged = data.count(data.graded)
    audit = token_audit(ledger, run.id)
    return TrainReport.from_json(
        {
            "run": run_name,
            "kind": run.kind,
            "metric": metric,
            "trajectories": data.trajectories,
            "judged": judged,
            "pass_pct": pct(data.score(data.graded), judged),
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
            "tokens": None if audit is None else audit.to_json(),
            **({"hacking": hacking} if (hacking := hack_table(ledger, run.id, bucket)) else {}),
        }
    )

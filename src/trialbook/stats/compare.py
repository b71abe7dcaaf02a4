"""`trialbook compare`: one baseline against one or more candidates, paired over tasks.

Returns a `stats.comparison.CompareResult` (its JSON form: the README documents ROW = one Comparison).
Percent and percentage points throughout the output; fractions inside.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from trialbook.errors import UserError
from trialbook.ledger.store import Ledger
from trialbook.stats import caveats
from trialbook.stats.comparison import (
    Attempts,
    CompareResult,
    Comparison,
    Gap,
    PassAtK,
    RepoComparison,
    SensitivityReport,
    SensitivityVerdict,
    Split,
)
from trialbook.stats.comparison import (
    CompareRequest as CompareRequest,  # re-exported: callers build the request where they call compare
)
from trialbook.stats.kernel import clip_ci, did_interval, pseudo_scale, t_interval, win_loss
from trialbook.stats.multiple import bonferroni_confidence, holm
from trialbook.stats.paired import Paired, bootstrap_ci, paired
from trialbook.stats.passk import paired_pass_at_k
from trialbook.stats.scores import TaskScores, check_metric, load_scores
from trialbook.stats.selection import read_task_list, resolve_repos

LEVEL = 0.95
Z95 = 1.959963984540054


def tasks_sha(ids: Sequence[str]) -> str:
    """What a look compared: sha256 of the paired task ids, sorted (stats.looks)."""
    return hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()


def content_sha(s: TaskScores) -> str:
    """What a run measured, whatever its name: sha256 of its task ids, graded attempts and task scores under the
    metric (stats.looks keys a family and a comparison by it, so a rename, copy or re-import is the same run
    and a re-run under the same name with --replace is a new one)."""
    order = np.argsort(s.task_ids, kind="stable")
    h = hashlib.sha256()
    h.update("\n".join(s.task_ids[order].tolist()).encode())
    h.update(np.ascontiguousarray(s.graded[order], dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(np.round(s.score[order], 12), dtype=np.float64).tobytes())
    return h.hexdigest()


def pp(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(100.0 * x, 4)


def exclude_repos(runs: Sequence[TaskScores], wanted: Sequence[str]) -> tuple[list[TaskScores], dict[str, int]]:
    """Drop the tasks of the named repos (`stats.selection.resolve_repos`: full or unambiguous short name)."""
    if not wanted:
        return list(runs), {}
    repos = np.array(resolve_repos(wanted, {str(r) for s in runs for r in s.repos}), dtype=str)
    dropped: dict[str, set[str]] = {}
    out = []
    for s in runs:
        m = np.isin(s.repos, repos)
        for repo, tid in zip(s.repos[m], s.task_ids[m], strict=True):
            dropped.setdefault(str(repo), set()).add(str(tid))
        out.append(s.subset(~m))
    return out, {repo: len(ids) for repo, ids in sorted(dropped.items())}


def align(base: TaskScores, cand: TaskScores) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Indices of the tasks graded in both runs (sorted by id), and why the others were not paired."""
    common, ib, ic = np.intersect1d(base.task_ids, cand.task_ids, assume_unique=True, return_indices=True)
    gb, gc = base.graded[ib] > 0, cand.graded[ic] > 0
    both = gb & gc
    unpaired = {
        "only_in_base": int(base.task_ids.size - common.size),
        "only_in_candidate": int(cand.task_ids.size - common.size),
        "ungraded_in_base": int((~gb & gc).sum()),
        "ungraded_in_candidate": int((gb & ~gc).sum()),
        "ungraded_in_both": int((~gb & ~gc).sum()),
    }
    return common[both], ib[both], ic[both], unpaired


def _adjust(rows: list[Comparison], diffs: list[tuple[np.ndarray, float]], m: int, min_diff: float,
            divisors: dict[str, float] | None = None) -> list[Comparison]:  # fmt: skip
    """Holm p (Bonferroni when candidates were picked among more than given), widened CIs, claim. `diffs`:
    each row's task differences and its pseudo-task scale (`kernel.pseudo_scale`). `divisors` (stats.looks):
    each candidate judged alone at alpha / its divisor instead (its look's share of the family's alpha)."""
    ps = [np.nan if r.p_value is None else r.p_value for r in rows]
    if divisors is not None:
        levels = [1 - (1 - LEVEL) / divisors[r.candidate] for r in rows]
        adjusted = [min(1.0, p * divisors[r.candidate]) for p, r in zip(ps, rows, strict=True)]
    else:
        levels = [bonferroni_confidence(m, LEVEL)] * len(rows)
        adjusted = holm(ps) if m == len(rows) else [min(1.0, p * m) for p in ps]
    out = []
    for row, (d, scale2), p_adj, level in zip(rows, diffs, adjusted, levels, strict=True):
        _, _, lo, hi = t_interval(d, level, scale2)
        lo, hi, _ = clip_ci(lo, hi, d.size)
        claim = bool(row.diff_pp is not None and row.diff_pp >= min_diff and np.isfinite(lo) and lo > 0)
        out.append(replace(row, p_adjusted=None if np.isnan(p_adj) else p_adj, ci_level=round(level, 6),
                           ci_adjusted_pp=[pp(lo), pp(hi)], claim=claim, lower_bound_pp=pp(lo)))  # fmt: skip
    return out


def _by_repo(repos: np.ndarray, b: np.ndarray, c: np.ndarray, gb: np.ndarray, gc: np.ndarray) -> list[RepoComparison]:
    out = []
    for repo in np.unique(repos):
        m = repos == repo
        r = paired(b[m], c[m], LEVEL, gb[m], gc[m])
        out.append(RepoComparison(
            repo=str(repo), tasks=r.n, base_pct=pp(r.base_mean), cand_pct=pp(r.cand_mean), diff_pp=pp(r.diff),
            ci_pp=[pp(r.ci[0]), pp(r.ci[1])], wins=r.wins, losses=r.losses, ties=r.ties,
        ))  # fmt: skip
    return out


def _check_names(base: str, candidates: Sequence[str], min_diff: float, picked_from: int | None) -> None:
    if not candidates:
        raise UserError("give at least one candidate run after the baseline")
    for c in candidates:
        if c == base:
            raise UserError(f"candidate '{c}' is the baseline itself")
    if len(set(candidates)) != len(candidates):
        raise UserError("a candidate run is named twice")
    if not np.isfinite(min_diff) or min_diff < 0:
        raise UserError(f"--min-diff must be a non-negative number of points, not {min_diff}")
    if picked_from is not None and picked_from < len(candidates):
        raise UserError(f"--picked-from {picked_from} is fewer than the {len(candidates)} candidates given")


def _subset_row(base: TaskScores, cand: TaskScores, pairs: tuple[np.ndarray, np.ndarray], mask: np.ndarray,
                subset: str, excluded: list[str], bootstrap: bool,
                unpaired: dict[str, int] | None) -> tuple[Comparison, Paired]:  # fmt: skip
    """One ROW (before multiplicity adjustment) for the paired tasks selected by mask (`pairs`: the base's and the
    candidate's index of each paired task)."""
    ib, ic = pairs
    b, c = base.score[ib][mask], cand.score[ic][mask]
    r = paired(b, c, LEVEL, base.graded[ib][mask], cand.graded[ic][mask])
    boot = None
    if bootstrap:
        lo, hi = bootstrap_ci(c - b, LEVEL)
        boot = [pp(lo), pp(hi)]
    pk = paired_pass_at_k(base.graded[ib][mask], base.resolved[ib][mask],
                          cand.graded[ic][mask], cand.resolved[ic][mask])  # fmt: skip
    pass_at_k = {
        k: PassAtK(tasks=v["tasks"], base_pct=pp(v["base"]), cand_pct=pp(v["cand"]), diff_pp=pp(v["diff"]),
                   ci_pp=[pp(v["ci"][0]), pp(v["ci"][1])], few_tasks=v["few_tasks"])
        for k, v in pk.items()
    }  # fmt: skip
    won, lost = win_loss(c - b)
    ids = base.task_ids[ib][mask]
    row = Comparison(
        candidate=cand.run, subset=subset, tasks_paired=r.n, base_pct=pp(r.base_mean), cand_pct=pp(r.cand_mean),
        diff_pp=pp(r.diff), se_pp=pp(r.se), ci_pp=[pp(r.ci[0]), pp(r.ci[1])], wins=r.wins, losses=r.losses,
        ties=r.ties, p_value=None if np.isnan(r.p_value) else r.p_value,  # fewer than 2 tasks: no test
        sign_p=r.sign_p, correlation=None if r.correlation is None else round(r.correlation, 4),
        few_tasks=r.few_tasks, excluded_repos=excluded,
        attempts=Attempts(base=caveats.typical_attempts(base), cand=caveats.typical_attempts(cand)),
        bootstrap_ci_pp=boot, pass_at_k=pass_at_k or None,
        tasks_won=[str(t) for t in ids[won]], tasks_lost=[str(t) for t in ids[lost]], unpaired=unpaired,
        tasks_sha=tasks_sha(ids.tolist()) if subset == "all" else None,
    )  # fmt: skip
    return row, r


def _candidate(
    base: TaskScores,
    cand: TaskScores,
    split_ids: np.ndarray | None,
    excluded: list[str],
    bootstrap: bool,
    warnings: list[str],
) -> tuple[dict[str, tuple[Comparison, tuple[np.ndarray, float]]], Gap | None, np.ndarray, np.ndarray]:
    """Rows by subset (with their task differences), the in-out gap, and the paired indices."""
    ids, ib, ic, unpaired = align(base, cand)
    if ids.size < 2:
        what = "no graded task in common" if ids.size == 0 else "only 1 graded task in common (need 2+)"
        raise UserError(f"runs '{base.run}' and '{cand.run}' have {what}")
    union = int(base.task_ids.size + unpaired["only_in_candidate"])  # task ids are unique within a run
    warnings += [w for w in caveats.run_caveats(base, cand) if w not in warnings]
    for w in (caveats.unpaired_caveat(cand.run, unpaired, union), caveats.few_tasks_caveat(cand.run, ids.size)):
        if w:
            warnings.append(w)
    masks = {"all": np.ones(ids.size, dtype=bool)}
    if split_ids is not None:
        masks["in"] = np.isin(ids, split_ids)
        masks["out"] = ~masks["in"]
    rows: dict[str, tuple[Comparison, tuple[np.ndarray, float]]] = {}
    results: dict[str, Paired] = {}
    for subset, mask in masks.items():
        if mask.sum() < 2:
            warnings.append(f"'{cand.run}': subset '{subset}' has {int(mask.sum())} paired tasks, no row")
            continue
        row, results[subset] = _subset_row(base, cand, (ib, ic), mask, subset, excluded, bootstrap,
                                           unpaired if subset == "all" else None)  # fmt: skip
        scale2 = pseudo_scale(base.graded[ib][mask], cand.graded[ic][mask])
        rows[subset] = (row, (cand.score[ic][mask] - base.score[ib][mask], scale2))
    gap = _gap(cand.run, results["in"], results["out"]) if "in" in results and "out" in results else None
    return rows, gap, ib, ic


def exclude_tasks(runs: Sequence[TaskScores], path: Path | None) -> tuple[list[TaskScores], str | None]:
    """Drop the tasks listed in a task-list file from every run before pairing."""
    if path is None:
        return list(runs), None
    ids = np.array(read_task_list(path, allow_empty=True), dtype=str)
    hit = int(np.isin(ids, np.concatenate([s.task_ids for s in runs])).sum())
    out = [s.subset(~np.isin(s.task_ids, ids)) for s in runs]
    return out, f"excluded before pairing: {hit} tasks listed in {path} ({ids.size} listed)"


def partial_caveat(runs: Sequence[TaskScores]) -> str | None:
    """`--metric resolved` counts a partial reward as unresolved: say how many there are."""
    counts = {s.run: s.partial_count for s in runs if s.metric == "resolved" and s.partial_count}
    if not counts:
        return None
    listed = ", ".join(f"'{run}' {n}" for run, n in counts.items())
    return (
        f"partial rewards (0 < reward < 1) count as unresolved under --metric resolved: {listed} graded"
        " trial(s); `--metric reward` compares mean reward"
    )


# How each rule counts the ungraded trials: (baseline's, candidates'), None = dropped from task means.
# The crossed rules are the true worst cases: every ungraded trial's real outcome is 0 or 1, so the
# difference it would have given lies between worst_low and worst_high (tests/stats/test_sensitivity_bounds.py).
SENSITIVITY: dict[str, tuple[str | None, str | None]] = {
    "dropped": (None, None),
    "as_failures": ("failure", "failure"),
    "as_successes": ("success", "success"),
    "worst_low": ("success", "failure"),
    "worst_high": ("failure", "success"),
}


def _sensitivity(ledger: Ledger, base_name: str, candidates: Sequence[str], runs: dict[str, TaskScores],
                 kw: dict[str, Any], rows: list[Comparison]) -> SensitivityReport | None:  # fmt: skip
    """The verdict with ungraded trials dropped (the rows above), counted as failures, as successes, and the
    two worst cases (the baseline's one way and the candidates' the other)."""
    ungraded = {n: int(s.trials.sum() - s.graded.sum()) for n, s in runs.items()}
    if not any(ungraded.values()):
        return None
    verdicts: dict[str, dict[str, SensitivityVerdict]] = {r.candidate: {} for r in rows if r.subset == "all"}
    for name, (base_rule, cand_rule) in SENSITIVITY.items():
        if base_rule is None:
            found = [r for r in rows if r.subset == "all"]
        else:
            other = {n: s.with_ungraded(base_rule if n == base_name else cand_rule)  # type: ignore[arg-type]
                     for n, s in runs.items()}  # fmt: skip
            try:
                asked = CompareRequest(base_name, candidates, **kw)
                found = compare(ledger, asked, runs=other, sensitivity=False).comparisons
            except UserError:
                found = []
        for r in found:
            if r.subset == "all" and r.candidate in verdicts:
                verdicts[r.candidate][name] = SensitivityVerdict(r.tasks_paired, r.diff_pp, r.ci_adjusted_pp, r.claim)
    return SensitivityReport(ungraded_trials=ungraded, verdicts=verdicts)


def compare(
    ledger: Ledger, request: CompareRequest, runs: dict[str, TaskScores] | None = None, sensitivity: bool = True
) -> CompareResult:
    """The full comparison (CompareRequest says what is asked). `runs` lets callers (prereg) pass preloaded,
    pre-filtered scores. With `sensitivity`, when any run has ungraded trials the verdict is also given with them
    counted as failures and as successes (`result.sensitivity`).
    """
    r = request
    base_name, candidates, exclude, split, min_diff = r.base, r.candidates, r.exclude, r.split, r.min_diff
    picked_from, by_repo, bootstrap, metric = r.picked_from, r.by_repo, r.bootstrap, r.metric
    exclude_task_file, shares = r.exclude_task_file, r.shares
    _check_names(base_name, candidates, min_diff, picked_from)
    metric = check_metric(metric)
    runs = runs or {n: load_scores(ledger, n) for n in (base_name, *candidates)}
    runs = {n: s.with_metric(metric) for n, s in runs.items()}
    loaded, dropped = exclude_repos([runs[n] for n in (base_name, *candidates)], exclude)
    loaded, dropped_tasks = exclude_tasks(loaded, exclude_task_file)
    base, cands = loaded[0], loaded[1:]
    warnings: list[str] = []
    if dropped:
        warnings.append("excluded before pairing: " + ", ".join(f"{r} ({n} tasks)" for r, n in dropped.items()))
    if dropped_tasks:
        warnings.append(dropped_tasks)
    warnings += [w for w in (*map(caveats.judged_caveat, loaded), partial_caveat(loaded)) if w]
    split_ids = None
    if split is not None:
        split_ids, unknown = _split_ids(split, loaded)
        if unknown:
            warnings.append(f"{split}: {unknown} of its {split_ids.size} tasks are in neither run")
    # training pools: read once, by the outer call (the sensitivity re-runs pass sensitivity=False)
    pools = train_pools(ledger) if split_ids is None and sensitivity else {}
    subsets = ["all"] if split_ids is None else ["all", "in", "out"]
    # the all / in / out rows are one family: a claim on a subgroup is adjusted for the other rows too
    m = max(len(cands), picked_from or 0) * len(subsets)
    family: dict[str, list[tuple[Comparison, tuple[np.ndarray, float]]]] = {s: [] for s in subsets}
    gaps, repo_tables = [], {}
    for cand in cands:
        rows, gap, ib, ic = _candidate(base, cand, split_ids, list(dropped), bootstrap, warnings)
        for w in overlap_caveats(base.task_ids[ib], split, split_ids, pools):
            if w not in warnings:
                warnings.append(w)
        for subset, item in rows.items():
            family[subset].append(item)
        if gap:
            gaps.append(gap)
        if by_repo:
            repo_tables[cand.run] = _by_repo(
                base.repos[ib], base.score[ib], cand.score[ic], base.graded[ib], cand.graded[ic]
            )
    divisors = None
    if shares is not None:  # each look alone: its share of alpha, over --picked-from and the --split rows
        divisors = {c.run: (picked_from or 1) * len(subsets) / shares[c.run] for c in cands}
    out_rows: list[Comparison] = []
    for subset in subsets:  # each subset is its own family of m comparisons
        if family[subset]:
            rows, diffs = zip(*family[subset], strict=True)
            out_rows += _adjust(list(rows), list(diffs), m, min_diff, divisors)
    out_rows.sort(key=lambda r: (list(candidates).index(r.candidate), subsets.index(r.subset)))
    picked = m // len(subsets)
    many = caveats.multiplicity_caveat(picked, len(cands), bonferroni_confidence(m, LEVEL))
    if many and shares is None:
        warnings.append(many)
    if len(subsets) > 1 and shares is None:
        warnings.append(
            f"the all, in and out rows are one family: each is judged as one of {m} comparisons (Bonferroni,"
            f" CIs {100 * bonferroni_confidence(m, LEVEL):.1f}%), so a subgroup's claim is adjusted for the others"
        )
    sens = None
    if sensitivity:
        kw = {"exclude": exclude, "min_diff": min_diff, "picked_from": picked_from, "metric": metric,
              "exclude_task_file": exclude_task_file, "shares": shares}  # fmt: skip
        sens = _sensitivity(ledger, base_name, candidates, runs, kw, out_rows)
    return CompareResult(
        baseline=base_name, metric=metric, comparisons=out_rows, min_diff_pp=min_diff, candidates_considered=m,
        excluded=dropped, warnings=warnings,
        split=None if split_ids is None else Split(file=str(split), tasks=int(split_ids.size), gaps=gaps),
        by_repo=repo_tables if by_repo else None, sensitivity=sens,
        content={s.run: content_sha(s) for s in (runs[base_name], *(runs[c] for c in candidates))},
    )  # fmt: skip


def train_pools(ledger: Any) -> dict[str, np.ndarray]:
    """The task ids of each training run (kind 'train') in the ledger: its pool. Empty without a ledger
    connection (preloaded scores) or without training runs."""
    engine = getattr(ledger, "engine", None)
    if engine is None:
        return {}
    from sqlalchemy import select

    from trialbook.ledger.schema import runs, trials

    pools: dict[str, list[str]] = {}
    with engine.connect() as conn:
        for run_id, name in conn.execute(select(runs.c.id, runs.c.name).where(runs.c.kind == "train")).all():
            q = select(trials.c.task_id).distinct().where(trials.c.run_id == run_id)
            pools[name] = list(conn.execute(q).scalars())
    return {name: np.array(ids, dtype=str) for name, ids in pools.items()}


def overlap_caveats(ids: np.ndarray, split: Path | None, split_ids: np.ndarray | None,
                    pools: dict[str, np.ndarray]) -> list[str]:  # fmt: skip
    """Say when the compared tasks overlap a training pool: their gain mixes memorisation of those tasks with
    transfer. With --split, its list is the pool; otherwise every training run in the ledger is checked."""
    out = []
    if split_ids is not None:
        hit = int(np.isin(ids, split_ids).sum())
        if hit:
            out.append(
                f"{hit} of the {ids.size} paired tasks are in {split} (the in-pool rows): the 'all' row mixes"
                " memorisation of them with transfer; transfer is the 'out' row, memorisation vs transfer the"
                " in-minus-out difference below"
            )
        return out
    for name, pool in pools.items():
        hit = int(np.isin(ids, pool).sum())
        if hit:
            out.append(
                f"{hit} of the {ids.size} paired tasks are in the pool of training run '{name}': gains on them"
                f" mix memorisation with transfer; `--split` a list of that pool's tasks (`trialbook train report"
                f" {name}`) separates the two"
            )
    return out


def _split_ids(path: Path, runs: Sequence[TaskScores]) -> tuple[np.ndarray, int]:
    ids = np.array(read_task_list(path), dtype=str)
    known = np.unique(np.concatenate([s.task_ids for s in runs]))
    hit = np.isin(ids, known)
    if not hit.any():
        raise UserError(f"{path}: none of its {ids.size} tasks is in these runs")
    return ids, int((~hit).sum())


def _gap(cand: str, inside: Paired, outside: Paired) -> Gap:
    """In-pool gain minus out-of-pool gain (memorisation vs transfer); tests/stats/test_split_did.py checks
    that its interval covers a planted memorisation effect."""
    gap = inside.diff - outside.diff
    lo, hi, df = did_interval(gap, inside.se, inside.n, outside.se, outside.n, LEVEL)
    return Gap(candidate=cand, gap_pp=pp(gap), se_pp=pp(float(np.hypot(inside.se, outside.se))),
               ci_pp=[pp(lo), pp(hi)], in_tasks=inside.n, out_tasks=outside.n,
               df=None if not np.isfinite(df) else round(df, 1))  # fmt: skip

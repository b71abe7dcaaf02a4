"""`prereg init` writes a plan (seeded train/held-out split + decision rule + content hash) and
records it in the ledger; `prereg check` refuses a plan the ledger does not hold or whose content
differs from the recorded one, and runs that do not cover it, then gives the verdict on held-out
tasks only. Every check is logged in the ledger, and the multiplicity adjustment counts every
distinct candidate ever checked against the plan (checking candidates one call at a time does not
escape it); a candidate beyond the plan's `max_candidates`, or a baseline other than the one earlier
checks used, is refused (exit 2), and `prereg check` exits 1 when no candidate's claim holds.
A plan's `created` is informational: the ledger's registration time is what counts."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from trialbook.errors import UserError
from trialbook.ledger import looks as ledger_looks
from trialbook.ledger import plans as ledger_plans
from trialbook.ledger.store import Ledger
from trialbook.stats.compare import CompareRequest, compare
from trialbook.stats.comparison import PreregCheck, PreregSpec
from trialbook.stats.scores import TaskScores, check_metric, load_scores
from trialbook.stats.selection import read_task_list

FORMAT = 1
FIELDS = (
    "trialbook_prereg", "created", "pool", "seed", "train", "holdout", "holdout_repeats",
    "min_diff_pp", "max_candidates", "decision_rule", "hash",
)  # fmt: skip


UNGRADED_RULES = ("dropped", "as_failures")  # how the verdict treats ungraded trials (compare's sensitivity names)


def canonical(plan: dict[str, Any]) -> str:
    return json.dumps(plan, sort_keys=True, separators=(",", ":"), default=str)


def content_hash(plan: dict[str, Any]) -> str:
    body = {k: v for k, v in plan.items() if k != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def split_pool(pool: list[str], train: int, holdout: int, seed: int) -> tuple[list[str], list[str]]:
    """Seeded permutation of the sorted pool: the first `holdout` are held out, the next `train` train."""
    order = np.random.default_rng(seed).permutation(len(pool))
    ids = [sorted(pool)[i] for i in order]
    return sorted(ids[holdout : holdout + train]), sorted(ids[:holdout])


def init_plan(ledger: Ledger, spec: PreregSpec, out: Path) -> dict[str, Any]:
    pool_file, train, holdout, seed = spec.pool_file, spec.train, spec.holdout, spec.seed
    holdout_repeats, min_diff, max_candidates = spec.holdout_repeats, spec.min_diff, spec.max_candidates
    metric, ungraded = spec.metric, spec.ungraded
    pool = read_task_list(pool_file)
    if train < 0 or holdout < 1:
        raise UserError("--holdout must be at least 1 and --train at least 0")
    if train + holdout > len(pool):
        raise UserError(f"--train {train} + --holdout {holdout} exceeds the pool's {len(pool)} tasks")
    if holdout_repeats < 1:
        raise UserError(f"--holdout-attempts must be at least 1, not {holdout_repeats}")
    if min_diff < 0:
        raise UserError(f"--min-diff must be non-negative, not {min_diff}")
    if max_candidates < 1:
        raise UserError(f"--candidates must be at least 1, not {max_candidates}")
    metric = check_metric(metric)
    if ungraded not in UNGRADED_RULES:
        raise UserError(f"--ungraded must be one of {', '.join(UNGRADED_RULES)}, not {ungraded!r}")
    train_ids, holdout_ids = split_pool(pool, train, holdout, seed)
    pool_hash = hashlib.sha256("\n".join(sorted(pool)).encode()).hexdigest()
    plan: dict[str, Any] = {
        "trialbook_prereg": FORMAT,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "pool": {"file": str(pool_file), "tasks": len(pool), "sha256": pool_hash},
        "seed": seed,
        "holdout_repeats": holdout_repeats,
        "min_diff_pp": float(min_diff),
        "max_candidates": max_candidates,
        "metric": metric,
        "ungraded": ungraded,
        "decision_rule": (
            f"on the {holdout} held-out tasks with {holdout_repeats} graded attempt(s) each, a candidate is"
            f" confirmed when its paired difference of task means ({metric}) is >= {min_diff:g} pp and the"
            f" lower bound of its 95% CI (Bonferroni-widened for the candidates checked, at least"
            f" {max_candidates}) is > 0; ungraded trials {ungraded.replace('_', ' ')}"
        ),
        "train": train_ids,
        "holdout": holdout_ids,
    }
    plan["hash"] = content_hash(plan)
    if out.exists():
        raise UserError(f"{out} already exists: a plan is written once (choose another --out)")
    with ledger.transaction() as conn:  # recorded and written together, or neither
        ledger_plans.register_plan(ledger, conn, plan["hash"], canonical(plan))
        try:
            out.write_text(yaml.safe_dump(plan, sort_keys=False, width=1000))
        except OSError as exc:
            raise UserError(f"cannot write {out}: {exc.strerror}") from None
    return plan


def load_plan(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise UserError(f"no such plan file: {path}")
    try:
        plan = yaml.safe_load(path.read_text())
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})") from None
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        raise UserError(f"{path}: not YAML{f' (line {where.line + 1})' if where else ''}") from None
    if not isinstance(plan, dict):
        raise UserError(f"{path}: not a trialbook plan (expected a YAML mapping)")
    missing = [f for f in FIELDS if f not in plan]
    if missing:
        raise UserError(f"{path}: plan lacks the field '{missing[0]}'")
    if not isinstance(plan["holdout"], list) or not plan["holdout"]:
        raise UserError(f"{path}: 'holdout' must be a non-empty list of task ids")
    if content_hash(plan) != plan["hash"]:
        raise UserError(f"{path}: plan was edited after it was hashed (content hash does not match)")
    return plan


def _coverage(s: TaskScores, holdout: np.ndarray, repeats: int, rule: str = "dropped") -> None:
    """Every held-out task has `repeats` graded attempts (any attempts when ungraded ones count as failures)."""
    idx = {t: i for i, t in enumerate(s.task_ids)}
    have = s.trials if rule == "as_failures" else s.graded
    short = [t for t in holdout if t not in idx or have[idx[t]] < repeats]
    if short:
        raise UserError(
            f"run '{s.run}' does not cover the plan: {len(short)} of {holdout.size} held-out tasks have fewer"
            f" than {repeats} graded attempts (first: {short[0]})"
        )


def _restrict(runs: dict[str, TaskScores], ids: np.ndarray) -> dict[str, TaskScores]:
    return {n: s.subset(np.isin(s.task_ids, ids)) for n, s in runs.items()}


def registered(ledger: Ledger, path: Path, plan: dict[str, Any]) -> ledger_plans.PlanRow:
    """The ledger's record of this plan; UserError when it holds none or a different content."""
    short = plan["hash"].removeprefix("sha256:")[:12]
    row = ledger_plans.get_plan(ledger, plan["hash"])
    if row is None:
        raise UserError(
            f"{path}: plan {short} is not registered in this ledger (`prereg init --db` records a plan;"
            " an edited plan is a new, unregistered plan)"
        )
    if row.content != canonical(plan):
        raise UserError(f"{path}: content differs from plan {short} as registered on {row.registered}")
    return row


def check_plan(ledger: Ledger, path: Path, base: str, cands: list[str]) -> PreregCheck:
    plan = load_plan(path)
    row = registered(ledger, path, plan)
    if len(set(cands)) != len(cands) or base in cands:
        raise UserError("each run may be named once (baseline and candidates)")
    if len(cands) > plan["max_candidates"]:
        raise UserError(f"{len(cands)} candidates but the plan preregistered at most {plan['max_candidates']}")
    earlier = ledger_plans.checks(ledger, plan["hash"])
    bases = sorted({ch.base for ch in earlier} - {base})
    if bases:
        raise UserError(
            f"plan {plan['hash'].removeprefix('sha256:')[:12]} was checked against baseline '{bases[0]}': a"
            f" changed baseline ('{base}') is a new experiment; preregister a new plan"
        )
    seen = sorted({c for ch in earlier for c in ch.candidates} | set(cands))
    if len(seen) > int(plan["max_candidates"]):
        new = [c for c in cands if c not in {c for ch in earlier for c in ch.candidates}]
        raise UserError(
            f"candidate {', '.join(repr(c) for c in new)} is not planned: the plan preregistered at most"
            f" {plan['max_candidates']} candidate(s) and {', '.join(c for c in seen if c not in new)} were"
            " checked already; preregister a new plan for more"
        )
    m = max(int(plan["max_candidates"]), len(seen))
    metric, rule = plan.get("metric", "resolved"), plan.get("ungraded", "dropped")
    runs = {n: load_scores(ledger, n, metric) for n in (base, *cands)}
    holdout = np.array(plan["holdout"], dtype=str)
    for s in runs.values():
        _coverage(s, holdout, int(plan["holdout_repeats"]), rule)
    kw: dict[str, Any] = {"min_diff": float(plan["min_diff_pp"]), "picked_from": m, "metric": metric}
    asked = CompareRequest(base, cands, **kw)
    held = compare(ledger, asked, runs=_restrict(runs, holdout))
    sens = held.sensitivity
    if rule != "dropped":  # the preregistered rule decides; the sensitivity block still shows all three
        counted = {n: s.with_ungraded("failure") for n, s in _restrict(runs, holdout).items()}
        held = compare(ledger, asked, runs=counted, sensitivity=False)
    warnings = list(held.warnings)
    train = np.array(plan["train"], dtype=str)
    in_pool = None
    if train.size and all(np.isin(train, s.task_ids).any() for s in runs.values()):
        try:
            in_pool = replace(compare(ledger, asked, runs=_restrict(runs, train)),
                              label="secondary: in-pool (train) tasks, not the preregistered test")  # fmt: skip
        except UserError:
            in_pool = None
    early = [n for n, s in runs.items() if s.created < row.registered]
    if early:
        warnings.append(
            f"run(s) {', '.join(early)} were created before the plan was registered ({row.registered}):"
            " check they were not peeked at"
        )
    held = replace(held, warnings=warnings, sensitivity=sens and replace(sens, preregistered=rule))
    verdict = {r.candidate: r.claim for r in held.comparisons if r.subset == "all"}
    ledger_plans.log_check(ledger, plan["hash"], base, list(cands), {"verdict": verdict, "candidates_considered": m})
    ledger_looks.record(ledger, [  # every printed verdict is kept (stats/looks.py); the plan is its own family
        ledger_looks.LookRow(f"plan:{plan['hash'].removeprefix('sha256:')[:12]}", base, r.candidate,
                             r.tasks_sha or "", r.tasks_paired, "prereg", r.diff_pp, r.p_value, r.claim,
                             ledger_plans.now())
        for r in held.comparisons if r.subset == "all"
    ])  # fmt: skip
    return PreregCheck(
        plan=str(path), hash=plan["hash"], registered=row.registered, holdout_tasks=int(holdout.size),
        holdout_repeats=int(plan["holdout_repeats"]), min_diff_pp=float(plan["min_diff_pp"]), metric=metric,
        ungraded=rule, candidates_checked=seen, checks_before=len(earlier), verdict=verdict, holdout=held,
        in_pool=in_pool,
    )  # fmt: skip

"""A synthetic training log with known ground truth (`trialbook sim rollouts`), for tests and demos.

The model follows an asynchronous RL run (SkyRL-style): a pool of tasks with fixed per-task difficulty, each epoch a
shuffled pass over the pool in batches of B tasks x G rollouts (the last partial batch dropped),
weight versions lagging the trainer by up to the staleness bound, and - without cross-epoch
sampling - the SkyRL epoch reset: the last S versions of an epoch generate nothing, the first S+1
steps of the next epoch all use one version, and the first step of the new epoch waits `stall_s`.
The only learning is per task: the k-th encounter of a task solves it with
sigmoid(logit p_i + gain x (k-1)); first encounters never improve (no transfer). After the last
step `incomplete` trajectories are cut off without a result.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from trialbook.errors import UserError
from trialbook.training.report_types import RolloutTruth

# SWE-bench Verified's repos with roughly their task shares.
REPOS = (
    ("django", "django", 46), ("sympy", "sympy", 15), ("sphinx-doc", "sphinx", 9),
    ("matplotlib", "matplotlib", 7), ("scikit-learn", "scikit-learn", 6), ("astropy", "astropy", 4),
    ("pydata", "xarray", 4), ("pytest-dev", "pytest", 4), ("pylint-dev", "pylint", 2),
    ("psf", "requests", 2), ("mwaskom", "seaborn", 1), ("pallets", "flask", 1),
)  # fmt: skip
START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class RolloutConfig:
    pool: int = 250
    group: int = 8
    batch: int = 16
    staleness: int = 3
    epochs: int = 4
    gain: float = 0.1  # logit gain per re-encounter of the same task
    base_logit: float = 0.35  # mean of per-task logits (difficulty)
    spread: float = 2.2  # sd of per-task logits
    incomplete: int = 128
    step_s: float = 600.0
    stall_s: float = 4500.0
    cross_epoch: bool = False
    seed: int = 0

    def check(self) -> None:
        for name in ("pool", "group", "batch", "epochs"):
            if getattr(self, name) < 1:
                raise UserError(f"--{name} must be at least 1")
        if self.batch > self.pool:
            raise UserError(f"--batch {self.batch} is larger than --tasks {self.pool}: no full batch to train on")
        if self.staleness < 0 or self.incomplete < 0 or self.step_s <= 0 or self.stall_s < 0:
            raise UserError("--staleness, --incomplete and --stall-s must be >= 0 and --train-step-s > 0")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _schedule(cfg: RolloutConfig, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One row per group: task, step, wv, epoch, encounter index k (1 = first time the task is sampled)."""
    n = cfg.pool // cfg.batch
    seen = np.zeros(cfg.pool, dtype=np.int64)
    parts: dict[str, list[np.ndarray]] = {"task": [], "step": [], "wv": [], "epoch": [], "k": []}
    for e in range(cfg.epochs):
        tasks = rng.permutation(cfg.pool)[: n * cfg.batch]
        step = e * n + np.arange(n * cfg.batch) // cfg.batch + 1
        floor = 0 if cfg.cross_epoch else e * n
        seen[tasks] += 1
        parts["task"].append(tasks)
        parts["step"].append(step)
        parts["wv"].append(np.maximum(floor, step - 1 - cfg.staleness))
        parts["epoch"].append(np.full(len(tasks), e))
        parts["k"].append(seen[tasks].copy())
    return {k: np.concatenate(v) for k, v in parts.items()}


def _truth(cfg: RolloutConfig, logit: np.ndarray, groups: dict[str, np.ndarray], cut_wv: int) -> dict[str, Any]:
    n = cfg.pool // cfg.batch
    times = np.bincount(groups["task"], minlength=cfg.pool)
    gains = {}
    for k in range(2, int(times.max()) + 1):
        t = times >= k
        gains[str(k)] = round(100 * float((_sigmoid(logit[t] + cfg.gain * (k - 1)) - _sigmoid(logit[t])).mean()), 3)
    t = times >= 3
    last = _sigmoid(logit[t] + cfg.gain * (times[t] - 1)) - _sigmoid(logit[t])
    used = np.unique(np.r_[groups["wv"], [cut_wv] if cfg.incomplete else []].astype(np.int64))
    return {
        "tasks": cfg.pool,
        "steps": cfg.epochs * n,
        "first_encounter_pct": round(100 * float(_sigmoid(logit).mean()), 3),
        "encounter_gain_pp": gains,
        "last_minus_first_pp": round(100 * float(last.mean()), 3) if t.any() else None,
        "stall_steps": [] if cfg.cross_epoch else [e * n + 1 for e in range(1, cfg.epochs)],
        "stall_s": cfg.stall_s,
        "empty_wv": [int(v) for v in np.setdiff1d(np.arange(used.min(), used.max() + 1), used)],
        "incomplete": cfg.incomplete,
    }


def _task_ids(cfg: RolloutConfig, rng: np.random.Generator) -> list[str]:
    weights = np.array([w for *_, w in REPOS], dtype=float)
    picks = rng.choice(len(REPOS), size=cfg.pool, p=weights / weights.sum())
    return [f"{REPOS[r][0]}__{REPOS[r][1]}-{10000 + i}" for i, r in enumerate(picks)]


def _outcomes(cfg: RolloutConfig, rng: np.random.Generator, resolved: np.ndarray, progress: np.ndarray) -> np.ndarray:
    """Failure kinds: CBF (agent_timeout) share of failures falls from 60% to 30% over the run."""
    u = rng.random(len(resolved))
    cbf = 0.6 - 0.3 * progress
    kinds = np.select(
        [resolved, u < cbf, u < cbf + 0.3, u < cbf + 0.32, u < cbf + 0.36],
        ["resolved", "agent_timeout", "p2p", "format_error", "context_overflow"],
        default="unresolved",
    )
    return kinds


def write_steps(cfg: RolloutConfig, rng: np.random.Generator, path: Path, rewards: np.ndarray) -> None:
    truth_stalls = set() if cfg.cross_epoch else {e * (cfg.pool // cfg.batch) + 1 for e in range(1, cfg.epochs)}
    t = START
    with path.open("wb") as fh:
        for s in range(1, len(rewards) + 1):
            wait = cfg.stall_s if s in truth_stalls else cfg.step_s * float(rng.lognormal(0.0, 0.15))
            end = t + timedelta(seconds=wait)
            obj = {
                "step": s,
                "started_at": t.isoformat(),
                "finished_at": end.isoformat(),
                "raw_reward": round(float(rewards[s - 1]), 4),
                "entropy": round(float(rng.uniform(0.35, 0.44)), 4),
                "grad_norm": round(float(rng.uniform(0.08, 0.11)), 4),
                "kl": round(float(rng.uniform(0.001, 0.004)), 5),
            }
            fh.write(orjson.dumps(obj) + b"\n")
            t = end


def generate(cfg: RolloutConfig, out: Path, steps_out: Path | None = None) -> RolloutTruth:
    """Write the trajectories JSONL (and the steps JSONL); return the ground truth."""
    cfg.check()
    rng = np.random.default_rng(cfg.seed)
    ids = _task_ids(cfg, rng)
    logit = rng.normal(cfg.base_logit, cfg.spread, cfg.pool)
    groups = _schedule(cfg, rng)
    rows = {k: np.repeat(v, cfg.group) for k, v in groups.items()}
    p = _sigmoid(logit[rows["task"]] + cfg.gain * (rows["k"] - 1))
    resolved = rng.random(len(p)) < p
    total_steps = int(groups["step"].max())
    kinds = _outcomes(cfg, rng, resolved, (rows["step"] - 1) / max(1, total_steps - 1))
    duration = np.where(kinds == "agent_timeout", 3600.0, np.minimum(3600.0, rng.lognormal(np.log(900), 0.6, len(p))))
    cut_wv = total_steps if not cfg.cross_epoch else max(0, total_steps - cfg.staleness)
    step_reward = np.bincount(rows["step"], weights=resolved)[1:] / np.bincount(rows["step"])[1:]
    try:
        with out.open("wb") as fh:
            for i in range(len(p)):
                kind = str(kinds[i])
                obj: dict[str, Any] = {
                    "task_id": ids[rows["task"][i]],
                    "step": int(rows["step"][i]),
                    "wv": int(rows["wv"][i]),
                    "epoch": int(rows["epoch"][i]),
                    "outcome": "unresolved" if kind == "p2p" else kind,
                    "duration_s": round(float(duration[i]), 1),
                }
                if kind == "p2p":
                    obj["tests"] = {"FAIL_TO_PASS": {"test_fix": "pass"}, "PASS_TO_PASS": {"test_old": "fail"}}
                fh.write(orjson.dumps(obj) + b"\n")
            # The run is stopped after its last step: these were generated but never graded.
            for _ in range(cfg.incomplete):
                obj = {"task_id": ids[int(rng.integers(cfg.pool))], "step": total_steps + 1, "wv": cut_wv}
                obj["epoch"] = cfg.epochs
                fh.write(orjson.dumps(obj) + b"\n")
        if steps_out is not None:
            write_steps(cfg, rng, steps_out, step_reward)
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename}: {exc.strerror}") from None
    truth = _truth(cfg, logit, groups, cut_wv)
    truth["trajectories"] = len(p) + cfg.incomplete
    truth["out"] = str(out)
    truth["steps_out"] = None if steps_out is None else str(steps_out)
    return RolloutTruth.from_json(truth)

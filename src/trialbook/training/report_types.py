"""Typed results of `train report` (training.analysis), `sim pipeline` and `sim rollouts`: what the
printers (report/training.py) and the web's training views take. `to_json()` is the documented JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trialbook.result_types import ABSENT, Absent, Result, optional, renamed


@dataclass(frozen=True, kw_only=True)
class Bucket(Result):
    """Trajectories of a range of weight versions."""

    wv_from: int
    wv_to: int
    trajectories: int
    judged: int
    pass_pct: float | None
    ci_pct: list[float] | None  # task-cluster 95% interval
    outcome_pct: dict[str, float | None]  # failure kind (analysis.SHARE_KINDS) -> % of trajectories
    metrics: dict[str, list[float]]  # optimizer-step metric -> [min, max] over the bucket's steps
    pass_pct_all_repos: float | None | Absent = optional(default=ABSENT, keep_none=True)  # with --exclude-repo


@dataclass(frozen=True, kw_only=True)
class PassRow(Result):
    """One pass over the task pool (epoch)."""

    pass_: int = renamed("pass")
    tasks: int
    trajectories: int
    judged: int
    pass_pct: float | None


@dataclass(frozen=True, kw_only=True)
class Encounter(Result):
    """The k-th encounter of a task against its first, over tasks encountered k times."""

    k: int
    tasks: int
    diff_pp: float | None
    ci_pp: list[float] | None
    first_pct: float
    kth_pct: float
    new_tasks: int  # tasks first seen while these k-th encounters ran
    new_task_pct: float | None
    few_tasks: bool = False  # fewer than stats.kernel.FEW_TASKS tasks: the small-sample interval, flagged
    did_pp: float | None = optional()  # k-th % - new tasks % (memorisation vs transfer, training/encounters.py)
    did_ci_pp: list[float] | None = optional()


@dataclass(frozen=True)
class LastMinusFirst(Result):
    min_graded_encounters: int
    tasks: int
    diff_pp: float | None
    ci_pp: list[float] | None
    few_tasks: bool = False


@dataclass(frozen=True)
class SlowStep(Result):
    step: int
    wait_s: float
    epoch_boundary: bool


@dataclass(frozen=True)
class Stalls(Result):
    empty_wv: list[int]  # weight versions that produced no trajectories
    slow_steps: list[SlowStep]
    median_step_s: float | None
    lost_gpu_hours: float | None  # with --gpus


@dataclass(frozen=True)
class EvalOverlap(Result):
    eval_set: str
    pool_tasks: int
    overlap: int


@dataclass(frozen=True)
class HackShare(Result):
    """A weight-version bucket's share of trajectories per reward-hacking signature (training/hacking.py)."""

    wv_from: int
    wv_to: int
    trajectories: int
    pct: dict[str, float | None]  # signature (verify/hacks.HACKS) -> % of the bucket's trajectories


@dataclass(frozen=True, kw_only=True)
class TrainReport(Result):
    run: str
    kind: str
    metric: str  # resolved | reward (stats.scores.check_metric)
    trajectories: int
    judged: int
    pass_pct: float | None
    tasks: int
    steps: int
    bucket: int  # weight versions per bucket
    excluded_repos: dict[str, int]  # repo -> trajectories dropped
    buckets: list[Bucket]
    passes: list[PassRow]
    encounters: list[Encounter]
    last_minus_first: LastMinusFirst | None
    stalls: Stalls
    eval_overlap: EvalOverlap | None
    warnings: list[str]
    tokens: TokenAudit | None | Absent = optional(default=ABSENT)  # runs whose trials recorded token ids
    hacking: list[HackShare] | None = optional()  # only when a trajectory shows a reward-hacking signature


@dataclass(frozen=True)
class WvAudit(Result):
    """Token-exactness of the trials of one weight version."""

    wv: int | None
    trials: int
    turns: int
    prefix_breaks: int
    broken_trials: int


@dataclass(frozen=True)
class BrokenTrial(Result):
    """A trial (tagged `broken_prefix`) with a turn whose prompt does not extend the previous prompt + completion."""

    trial_id: int
    task_id: str
    attempt: int
    step: int | None
    wv: int | None
    broken_turns: list[int]


@dataclass(frozen=True, kw_only=True)
class TokenAudit(Result):
    """Token-level trajectories of a run (trialbook/trajectory.py): turns, exactness, broken prefixes, staleness."""

    with_tokens: int  # trials that recorded their token ids (through the gateway or a trainer)
    turns: int
    prefix_breaks: int
    broken_trials: int
    inexact_trials: int  # trials with a turn whose ids were not the engine's own
    staleness_max: int | None
    staleness_mean: float | None
    by_wv: list[WvAudit]
    broken: list[BrokenTrial]
    masked_groups: list[str]  # groups masked whole by the rewards policy's group rule
    tag: str


@dataclass(frozen=True)
class BoundaryStall(Result):
    epoch: int
    wait_s: float


@dataclass(frozen=True)
class Boundary(Result):
    epoch: int
    step: int  # first step of the epoch
    wait_s: float
    stall: bool


@dataclass(frozen=True)
class StepLog(Result):
    step: int
    wait_s: float
    finished_s: float
    epoch: int


@dataclass(frozen=True, kw_only=True)
class PipelineResult(Result):
    """`sim pipeline`: the simulated run."""

    config: dict[str, Any]  # the PipelineConfig
    steps: int
    total_s: float
    steps_per_hour: float | None
    trainer_idle_fraction: float
    median_step_interval_s: float
    boundary_stalls: list[BoundaryStall]
    boundaries: list[Boundary]
    empty_wv: list[int]
    trajectories_by_wv: dict[str, int]
    step_log: list[StepLog]


@dataclass(frozen=True, kw_only=True)
class RolloutTruth(Result):
    """`sim rollouts`: the ground truth of the synthetic log it wrote."""

    tasks: int
    steps: int
    first_encounter_pct: float
    encounter_gain_pp: dict[str, float]  # k -> k-th minus 1st encounter
    last_minus_first_pp: float | None
    stall_steps: list[int]
    stall_s: float
    empty_wv: list[int]
    incomplete: int
    trajectories: int
    out: str
    steps_out: str | None

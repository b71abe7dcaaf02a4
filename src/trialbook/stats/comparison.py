"""What `compare` (stats.compare), `plan` (stats.power) and `prereg init` (prereg.plan) are asked (CompareRequest,
PlanRequest, PreregSpec: numpy-free, so the CLI builds them as it starts), and the typed results of `compare` and
`prereg check` (prereg.plan): what the printers take.

Their `to_json()` is the documented JSON of `compare --json`: percent and percentage points, the keys in
the order declared here. A CI is `[lo, hi]` (None bounds when undefined).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trialbook.result_types import Result, optional

CI = list[float | None]


@dataclass(frozen=True)
class CompareRequest:
    """What a comparison is asked: candidates against a baseline, and how (the `compare` command's options).

    `metric`: task means of resolved (reward 1.0) or of rewards (stats.scores). `shares` (stats.looks): candidate
    -> the share of alpha its look spends; each candidate is then judged alone at alpha x share / (--picked-from x
    the --split rows), not by Holm over the call's candidates."""

    base: str
    candidates: Sequence[str]
    exclude: Sequence[str] = ()  # repositories dropped before pairing
    split: Path | None = None  # a task list: in / out rows
    min_diff: float = 4.0
    picked_from: int | None = None
    by_repo: bool = False
    bootstrap: bool = False
    metric: str = "resolved"
    exclude_task_file: Path | None = None
    shares: dict[str, float] | None = None


@dataclass(frozen=True)
class PreregSpec:
    """What `prereg init` fixes: the pool's split (train, held out, by `seed`) and the decision rule."""

    pool_file: Path
    train: int
    holdout: int
    seed: int
    holdout_repeats: int = 1
    min_diff: float = 4.0
    max_candidates: int = 1
    metric: str = "resolved"
    ungraded: str = "dropped"


@dataclass(frozen=True)
class PlanRequest:
    """What a power plan is asked (the `plan` command's options): `tasks` and K (`repeats`) given or found for an
    `effect` in pp; variances from `from_run` (and per-task differences against `vs`), else from `base_rate`."""

    tasks: int | None
    repeats: int | None
    effect: float
    from_run: str | None = None
    vs: str | None = None
    base_rate: float = 50.0
    min_diff: float = 4.0
    metric: str = "resolved"


@dataclass(frozen=True)
class PassAtK(Result):
    tasks: int
    base_pct: float | None
    cand_pct: float | None
    diff_pp: float | None
    ci_pp: CI
    few_tasks: bool  # fewer than kernel.FEW_TASKS tasks: `ci_pp` clipped to [-100, +100]


@dataclass(frozen=True)
class Attempts(Result):
    """The most common number of current trials per task in each run."""

    base: int
    cand: int


@dataclass(frozen=True, kw_only=True)
class Comparison(Result):
    """One candidate against the baseline over one subset of the paired tasks (a ROW of the README)."""

    candidate: str
    subset: str  # all, in or out (--split)
    tasks_paired: int
    base_pct: float | None
    cand_pct: float | None
    diff_pp: float | None
    se_pp: float | None
    ci_pp: CI
    wins: int
    losses: int
    ties: int
    p_value: float | None
    sign_p: float
    correlation: float | None
    few_tasks: bool
    excluded_repos: list[str]
    attempts: Attempts
    bootstrap_ci_pp: CI | None = optional()
    pass_at_k: dict[str, PassAtK] | None = optional()
    tasks_won: list[str]
    tasks_lost: list[str]
    unpaired: dict[str, int] | None = None  # why tasks were not paired (subset "all" only)
    tasks_sha: str | None = optional()  # sha256 of the paired task ids (subset "all"): what a look compared
    # set by the multiplicity adjustment over the candidates
    p_adjusted: float | None = None
    ci_level: float = 0.95
    ci_adjusted_pp: CI | None = None
    claim: bool = False
    # what a claim means: the gain's lower bound (the adjusted CI's). No shrunken estimate: the sceptical
    # prior's was biased for real gains (+2.9 at a true +10 pp over 100 tasks; docs/statistics.md)
    lower_bound_pp: float | None = None


@dataclass(frozen=True)
class RepoComparison(Result):
    repo: str
    tasks: int
    base_pct: float | None
    cand_pct: float | None
    diff_pp: float | None
    ci_pp: CI
    wins: int
    losses: int
    ties: int


@dataclass(frozen=True)
class Gap(Result):
    """Memorisation vs transfer (--split): the candidate's gain on the listed (in-pool) tasks minus its gain
    on the others, a difference in differences, with its t interval on the Welch df (stats.kernel.did_interval)."""

    candidate: str
    gap_pp: float | None
    se_pp: float | None
    ci_pp: CI
    in_tasks: int = 0
    out_tasks: int = 0
    df: float | None = None


@dataclass(frozen=True)
class Split(Result):
    file: str
    tasks: int
    gaps: list[Gap]


@dataclass(frozen=True)
class SensitivityVerdict(Result):
    """One rule's verdict. The interval's ends are monotone in the task differences (stats.kernel.lower_ends),
    so worst_low's, every ungraded trial counted against the candidate, has the lowest lower end, difference
    and claim over every assignment of the ungraded trials, and worst_high's the highest."""

    tasks_paired: int
    diff_pp: float | None
    ci_adjusted_pp: CI | None
    claim: bool


@dataclass(frozen=True)
class SensitivityReport(Result):
    """The verdict per candidate with ungraded trials dropped / as failures / as successes."""

    ungraded_trials: dict[str, int]
    verdicts: dict[str, dict[str, SensitivityVerdict]]  # candidate -> rule -> verdict
    preregistered: str | None = None  # the rule a prereg plan fixed


@dataclass(frozen=True)
class LookReport(Result):
    """Where a `compare` call's comparisons stand in their family of looks (stats/looks.py): each comparison
    (both runs' content and the paired tasks) is one look, numbered in the family once and for all, and
    judged at the share of alpha its number spends; `family` None: the comparison alone, no family."""

    family: str | None
    look: dict[str, int]  # candidate -> its look's number in the family
    level: dict[str, float]  # candidate -> the CI level its look is judged at
    unadjusted: dict[str, bool]  # candidate -> the claim of the comparison alone
    recorded: bool = True  # False: a read-only ledger or the web page, which never record a look


@dataclass(frozen=True, kw_only=True)
class CompareResult(Result):
    baseline: str
    metric: str
    comparisons: list[Comparison]
    min_diff_pp: float
    candidates_considered: int
    excluded: dict[str, int]  # repo -> tasks dropped (--exclude-repo)
    warnings: list[str]
    split: Split | None = optional()
    by_repo: dict[str, list[RepoComparison]] | None = optional()
    sensitivity: SensitivityReport | None = None
    label: str | None = optional()  # prereg: what this secondary result is
    looks: LookReport | None = optional()  # this call's place among the family's looks (stats/looks.py)
    content: dict[str, str] | None = optional()  # run -> sha256 of what it measured (stats.compare.content_sha)
    listed: str | None = optional(key="list")  # --list wins|losses: print those task ids only


@dataclass(frozen=True, kw_only=True)
class PreregCheck(Result):
    """`prereg check`: the preregistered verdict on the held-out tasks, and the in-pool result."""

    plan: str
    hash: str
    registered: str
    holdout_tasks: int
    holdout_repeats: int
    min_diff_pp: float
    metric: str
    ungraded: str
    candidates_checked: list[str]
    checks_before: int
    verdict: dict[str, bool]
    holdout: CompareResult
    in_pool: CompareResult | None

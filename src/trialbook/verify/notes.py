"""The verifier's outcome besides its verdict, typed: why a grading has no verdict, or one the blame rules set
(`ErrorNote`, `Grading.error`), and what it noted on the way (`GradingNotes`, `Grading.notes`: kept as the trial's
`extra.verifier`, trialbook/extra_schema.py). Each note is set where its rule decides it and read by attribute."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypedDict

from trialbook.outcomes import ErrorKind


@dataclass(frozen=True)
class ErrorNote:
    """The error policy's name (outcomes.ErrorKind) and the message the trial records."""

    kind: ErrorKind
    message: str


class PatchRecord(TypedDict, total=False):
    """The agent's patch's record (verify/kept_patch.patch_record): its size and hash always, `compressed` where it is
    kept
    compressed too, `cut` only where it ran past PATCH_WHOLE."""

    bytes: int
    sha256: str
    compressed: str
    cut: bool


class ControlRun(TypedDict, total=False):
    """The verifier again with the task's own test infrastructure (verify/front.py): its reward, its error's kind,
    and the tail of its log when it did not resolve."""

    reward: float | None
    error: ErrorKind | None
    log_tail: str


class WithoutChange(TypedDict, total=False):
    """How the verifier ended on the image as built (verify/blame.Baseline), as the blame rule that ran it kept it."""

    end: str
    duration_s: float | None
    canary: str | None
    outlived: int
    exit_code: int | None


class WitnessRun(TypedDict, total=False):
    """The witness run's reading (verify/blame.unwitnessed_reward): its reward and canary, what it raised, its
    error's kind when it ended without a verdict, and the canary without the change when that was run."""

    reward: float | None
    canary: str | None
    raised: str
    error: ErrorKind
    without_change: str | None
    same_run: bool  # the graded run held the canaries itself (verify/onerun.py)


@dataclass
class GradingNotes:
    """What grading noted besides the verdict; `as_dict` keeps the ones set (None: not noted)."""

    patch: PatchRecord | None = None  # verify/kept_patch.patch_record
    paths_too_long: int | None = None  # paths of the agent's tree past PATH_MAX, not carried
    test_infra_files: list[str] | None = None  # test infrastructure the change touched (verify/infra.py)
    control: ControlRun | None = None
    without_change: WithoutChange | None = None
    not_gold: dict[str, str] | None = None  # listed tests not at their gold status (verify/blame.not_gold)
    changed_outside_tree: list[str] | None = None
    witness: WitnessRun | None = None
    verifier_disk_hit: int | None = None  # bytes past the disk quota while the tests ran
    limits_hit_in_tests: bool | None = None  # the limits were hit while the verifier ran, not while carrying
    verifier_limit_hits: dict[str, int] | None = None
    image_tree_bytes: int | None = None  # the image's own tree, measured when the carry outgrew the disk
    image_tree_index_s: float | None = None  # the image's own tree's index time, when the carry ran out of time
    raised: str | None = None  # what a witness raised instead of grading (verify/witness.py)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not None}

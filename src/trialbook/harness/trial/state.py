"""What one trial gathers while it runs (`TrialState`) and the record extra it becomes (`TrialExtra`).

A failed try leaves nothing in the record: the fields marked `per_try` are reset by `TrialState.new_try` before each
try (tests/harness/test_trial_state.py). The verifier's blame rules (verify/blame.py) read and write the state through
their `TrialNotes` protocol: its tags, its cleanup error, the working tree and the image's id.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from typing import Any, NamedTuple

from trialbook.agents.base import AgentResult
from trialbook.extra_schema import Extra
from trialbook.verify.runner import Verdict

_PER_TRY = {"per_try": True}


class ImageRef(NamedTuple):
    """A task's image as the trial used it: the reference containers start from and the image's id."""

    reference: str
    id: str


@dataclass
class TrialState:
    started: str = ""  # ISO time the trial began
    t0: float = 0.0  # time.monotonic() then
    phase_s: dict[str, float] = field(default_factory=dict)  # seconds per phase of the last try
    retries: int = 0  # tries before the last one
    cleanup_error: str | None = None  # a container that could not be removed (`clean` finds it)
    runtime: str | None = None  # the OCI runtime the agent's container ran under
    workdir: str | None = None  # the task's working tree, set where the verifier gets a fresh container
    image: ImageRef | None = field(default=None, metadata=_PER_TRY)
    agent_result: AgentResult | None = field(default=None, metadata=_PER_TRY)
    agent_limit_hits: dict[str, int] | None = field(default=None, metadata=_PER_TRY)
    verifier: dict[str, Any] | None = field(default=None, metadata=_PER_TRY)  # how it was graded: isolation, tries
    verifier_log: str = field(default="", metadata=_PER_TRY)
    patch: str = field(default="", metadata=_PER_TRY)  # the agent's change as the verifier applied it
    tags: list[str] = field(default_factory=list, metadata=_PER_TRY)
    traceback: str | None = field(default=None, metadata=_PER_TRY)  # an agent's or the harness's exception, as raised
    # how the trial ended: the last try's verdict (None where it raised), its policy name and message
    verdict: Verdict | None = None
    error: str | None = None
    error_message: str | None = None

    def new_try(self, k: int) -> None:
        """Start try `k` (0 first): every `per_try` field back to its default."""
        self.retries = k
        for f in fields(self):
            if f.metadata.get("per_try"):
                setattr(self, f.name, f.default_factory() if f.default_factory is not MISSING else f.default)

    @property
    def image_id(self) -> str:
        if self.image is None:
            raise RuntimeError("the trial's image is not known before the try has one")
        return self.image.id


@dataclass
class TrialExtra:
    """A live trial's `extra` (the ledger's trials.extra): what the harness knew besides the record's columns."""

    trial_name: str
    agent: str
    timeout_multiplier: float
    agent_timeout_s: float
    verifier_timeout_s: float
    retries: int
    phase_s: dict[str, float]
    verifier_hash: str
    tags: list[str]
    cleanup_error: str | None = None
    verifier: dict[str, Any] | None = None
    agent_limit_hits: dict[str, int] | None = None
    runtime: str | None = None
    image: ImageRef | None = None
    agent_result: AgentResult | None = None
    verdict_keys: Extra | None = None  # what the verdict adds (verify/verdict_record.verdict_keys)
    hack_zeroed: list[str] | None = None  # the hack_* tags that cost its training reward (rewards.py)

    def as_dict(self) -> dict[str, Any]:
        """The stored form (trialbook/extra_schema.Extra): the fixed keys always, the others only where the trial has
        them."""
        extra = Extra(
            trial_name=self.trial_name,
            agent=self.agent,
            timeout_multiplier=self.timeout_multiplier,
            agent_timeout_s=self.agent_timeout_s,
            verifier_timeout_s=self.verifier_timeout_s,
            retries=self.retries,
            phase_s=self.phase_s,
            verifier_hash=self.verifier_hash,
            tags=self.tags,
        )
        if self.cleanup_error:
            extra["cleanup_error"] = self.cleanup_error
        if self.verifier:
            extra["verifier"] = self.verifier
        if self.agent_limit_hits:
            extra["agent_limit_hits"] = self.agent_limit_hits
        if self.runtime:
            extra["runtime"] = self.runtime
        if self.hack_zeroed:  # its training reward is 0 (rewards.py), the verifier's reward and outcome stand
            extra["hack_zeroed"], extra["train_reward"] = self.hack_zeroed, 0.0
        if self.image:
            extra["image"], extra["image_id"] = self.image
        if (result := self.agent_result) is not None:
            extra["agent_exit_code"] = result.exit_code
            if result.info:
                extra["agent_info"] = result.info
            if result.files:
                extra["files"] = sorted(f"agent/{n}" for n in result.files)
        if self.verdict_keys is not None:
            extra |= self.verdict_keys
        return dict(extra)

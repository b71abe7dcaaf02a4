"""The one schema of a trial's `extra` (the ledger's trials.extra JSON): every key trialbook writes, its type, and
the typed accessors every package reads and writes it through.

`Extra` declares the keys. Writing: `with_extra(extra, key=value, ...)` returns a new dict and refuses a key that
`Extra` does not declare, so no module adds a key the schema does not know. Reading: `read_extra(trial)` (a record,
a ledger row, a decoded dict or the stored JSON text) gives an `ExtraReader` whose properties are typed and forgiving:
a missing key, or a value of another type (an old ledger's, an imported file's), reads as the property's empty value,
never as an exception. The stored form is unchanged (a JSON object), so every ledger written before stays readable.

Keys an importer does not know (a JSONL line's unlisted fields, importers/jsonl.py) are kept as they came and
exported back as they were: they are the source's, not trialbook's, and this schema does not declare them.
tests/test_extra_schema.py checks that no module outside this one reads `extra` as a free dict and that every
key written is declared here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypedDict, Unpack, cast


class CanaryNote(TypedDict):
    """The canary test the verifier planted (verify/canary.py) and what its log said of it."""

    name: str
    seen: str | None


class RolloutSummary(TypedDict):
    """A trial's trajectory in numbers (trialbook/trajectory.py `Trajectory.summary`)."""

    turns: int
    exact: bool
    prefix_breaks: int
    broken_turns: list[int]
    wv_first: int | None
    wv_last: int | None
    staleness: int | None
    policy_tokens: int
    model: str | None
    engine: str | None


class GroupMask(TypedDict):
    """Why a rollout group's rewards were masked (rl/rollout.py): its group, the policy and the members' reasons."""

    group: str
    policy: str
    because: list[str]


class Extra(TypedDict, total=False):
    """Every key of a trial's `extra` that trialbook writes. Grouped by who writes it."""

    # the harness, each trial (harness/trial/state.TrialExtra)
    trial_name: str | None  # the trial's folder name under runs/<run>/ (unique in a run); None: an import's without one
    agent: str
    timeout_multiplier: float
    agent_timeout_s: float
    verifier_timeout_s: float
    retries: int  # tries before the recorded one (lost engines and nodes count too)
    phase_s: Mapping[str, float | None]  # seconds per phase of the recorded try (None: an import's phase without times)
    verifier_hash: str
    tags: list[str]  # what the verdict, blame and signatures say besides the reward (`show`, the audit)
    cleanup_error: str  # a container that could not be removed
    verifier: dict[str, Any]  # how it was graded: isolation, tries, the verifier's notes (verify/isolation.Notes)
    agent_limit_hits: dict[str, int]
    runtime: str  # the OCI runtime the agent's container ran under
    image: str  # the reference the containers started from
    image_id: str
    agent_exit_code: int | None
    agent_info: dict[str, Any]  # agent-specific facts (agents/base.AgentResult.info)
    files: list[str]  # the trial's kept files (agent/<name>; an import's own)
    # the verdict (verify/runner.Verdict)
    graded_by: str
    file_reward: float | None
    test_exit_code: int | None
    tests_user: str
    rewards_by_tests: list[str]
    conflicting_tests: list[str]
    outlived_processes: int
    foreign_reward_files: list[str]
    canary: CanaryNote
    # the strict verdict (verify/findings.verdict_extra)
    official_reward: float  # swebench's own reward, beside the verifier's
    channels: str  # why exit status, text log and junit report disagree (verify/channels.py)
    seal: dict[str, str]  # the segment markers' nonces (verify/markers.py), for a regrade
    not_gold: dict[str, str]  # listed tests whose status was not their gold one (verify/gold.py)
    # training (rewards.py, rl/rollout.py, trialbook/trajectory.py)
    hack_zeroed: list[str]  # the hack_* tags that cost the training reward
    train_reward: float | None
    group_id: str | None
    masked: bool
    group_masked: GroupMask
    rollout: RolloutSummary
    # where it ran (harness/placement/fleet.py, harness/placement/raycluster.py)
    engine: str  # the engine's URL
    lost_engines: list[str]
    executor: str
    node_id: str
    hostname: str
    lost_nodes: list[str]
    # the ledger (ledger/store.Ledger.add_warning) and the Harbor importer (importers/harbor.py)
    warnings: list[str]
    rewards: dict[str, Any]  # Harbor's verifier_result.rewards
    files_left_out: list[str]


KEYS: frozenset[str] = frozenset(Extra.__annotations__)


def with_extra(extra: Mapping[str, Any] | None, **keys: Unpack[Extra]) -> dict[str, Any]:
    """A new `extra`: `extra` (None for none) with `keys` set. A key `Extra` does not declare is a TypeError."""
    if unknown := sorted(set(keys) - KEYS):
        raise TypeError(f"extra keys not declared in trialbook/extra_schema.py: {', '.join(unknown)}")
    return {**(extra or {}), **keys}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _strs(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


class ExtraReader:
    """Typed reads of one trial's `extra`; `raw` is the dict itself (empty where the trial has none)."""

    __slots__ = ("raw",)

    def __init__(self, raw: Mapping[str, Any] | None) -> None:
        self.raw: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}

    def has(self, key: str) -> bool:
        return key in self.raw

    @property
    def trial_name(self) -> str | None:
        return _str(self.raw.get("trial_name"))

    @property
    def agent(self) -> str | None:
        return _str(self.raw.get("agent"))

    @property
    def timeout_multiplier(self) -> float | None:
        return _num(self.raw.get("timeout_multiplier"))

    @property
    def agent_timeout_s(self) -> float | None:
        return _num(self.raw.get("agent_timeout_s"))

    @property
    def verifier_timeout_s(self) -> float | None:
        return _num(self.raw.get("verifier_timeout_s"))

    @property
    def retries(self) -> int:
        value = _num(self.raw.get("retries"))
        return int(value) if value is not None else 0

    @property
    def phase_s(self) -> dict[str, float]:
        return {k: float(v) for k, v in _dict(self.raw.get("phase_s")).items() if _num(v) is not None}

    @property
    def tags(self) -> list[str]:
        return _strs(self.raw.get("tags"))

    @property
    def agent_info(self) -> dict[str, Any]:
        return _dict(self.raw.get("agent_info"))

    @property
    def canary(self) -> CanaryNote | None:
        value = self.raw.get("canary")
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            return None
        return CanaryNote(name=value["name"], seen=_str(value.get("seen")))

    @property
    def official_reward(self) -> float | None:
        """swebench's own reward: present on a trial the strict verdict graded."""
        return _num(self.raw.get("official_reward"))

    @property
    def channels(self) -> str | None:
        return _str(self.raw.get("channels"))

    @property
    def seal(self) -> dict[str, str] | None:
        value = self.raw.get("seal")
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None

    @property
    def not_gold(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in _dict(self.raw.get("not_gold")).items()}

    @property
    def train_reward(self) -> float | None:
        return _num(self.raw.get("train_reward"))

    @property
    def group_id(self) -> str | None:
        value = self.raw.get("group_id")
        return None if value is None else str(value)

    @property
    def masked(self) -> bool:
        return bool(self.raw.get("masked"))

    @property
    def group_masked(self) -> GroupMask | None:
        value = self.raw.get("group_masked")
        if not isinstance(value, dict) or not value:
            return None
        return GroupMask(
            group=str(value.get("group")), policy=str(value.get("policy")), because=_strs(value.get("because"))
        )

    @property
    def rollout(self) -> RolloutSummary | None:
        """The trajectory's summary as stored (its values as they were written); None without one."""
        value = self.raw.get("rollout")
        return cast(RolloutSummary, dict(value)) if isinstance(value, dict) else None

    @property
    def warnings(self) -> list[str]:
        return _strs(self.raw.get("warnings"))


def read_extra(source: Any) -> ExtraReader:
    """The typed `extra` of `source`: anything with an `extra` attribute (a record, a ledger row), the dict itself,
    or its stored JSON text; an empty reader for None or JSON that is not an object."""
    raw = getattr(source, "extra", source) if not isinstance(source, Mapping | str | bytes) else source
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    return ExtraReader(raw if isinstance(raw, Mapping) else None)

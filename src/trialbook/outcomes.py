"""The outcome rules, in one place: how a trial ended, which errors are retried, what a reward is.

- `OUTCOMES`: each outcome, whether it is graded (counts in the denominator) and retryable;
- `POLICY` / `classify`: exception type name -> outcome, retry, graded (the error policy that
  `trialbook policy` prints); live trials and imported Harbor trials are classified alike;
- `pick_reward` / `parse_reward`: a reward from Harbor's `rewards` dict or the verifier's reward files;
- `NOT_PASSING` / `p2p_regression`: per-test statuses and the P2P-regression rule that grading,
  audit and the training report all apply;
- `REWARD_RANGE` / `reward_problem` / `contradiction`: the import contract every importer applies
  (a reward in its range; `outcome`, `resolved` and `reward` of one trial agree).

Nothing here imports the rest of trialbook, so every layer may ask these tables.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, NamedTuple

from trialbook.result_types import Result


class Outcome(StrEnum):
    """How a trial ended (the reward says whether it succeeded)."""

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    AGENT_TIMEOUT = "agent_timeout"
    CONTEXT_OVERFLOW = "context_overflow"
    FORMAT_ERROR = "format_error"
    VERIFIER_TIMEOUT = "verifier_timeout"
    INFRA_ERROR = "infra_error"
    INCOMPLETE = "incomplete"
    DISK_QUOTA = "disk_quota"


class OutcomeRule(NamedTuple):
    graded: bool  # counts in the denominator ("judged")
    retry: bool  # the harness may retry it
    meaning: str


OUTCOMES: dict[Outcome, OutcomeRule] = {
    Outcome.RESOLVED: OutcomeRule(True, False, "verifier passed (reward 1.0)"),
    Outcome.UNRESOLVED: OutcomeRule(True, False, "verifier failed: F2P fail and/or P2P regression"),
    Outcome.AGENT_TIMEOUT: OutcomeRule(True, False, "agent hit its time/turn budget; still graded"),
    Outcome.CONTEXT_OVERFLOW: OutcomeRule(True, False, "model context window exceeded; still graded"),
    Outcome.FORMAT_ERROR: OutcomeRule(True, False, "model output not parseable as an action; still graded"),
    Outcome.VERIFIER_TIMEOUT: OutcomeRule(False, False, "verifier hung or ran past its limit: no grade"),
    Outcome.INFRA_ERROR: OutcomeRule(False, True, "sandbox/daemon/build failure: no grade, retryable"),
    Outcome.INCOMPLETE: OutcomeRule(False, False, "no result: the run was cut off"),
    Outcome.DISK_QUOTA: OutcomeRule(True, False, "agent's sandbox wrote past its disk_mb; stopped, still graded"),
}

GRADED: frozenset[str] = frozenset(o.value for o, r in OUTCOMES.items() if r.graded)


def is_graded(outcome: str) -> bool:
    return outcome in GRADED


def is_resolved(outcome: str, reward: float | None) -> bool:
    """A graded trial counts as resolved when its reward is 1.0, whatever its outcome."""
    return outcome in GRADED and reward is not None and reward >= 1.0


# ---- the error policy ----------------------------------------------------------------------------


class ErrorKind(StrEnum):
    """The error policy's names: each is a key of `POLICY` (tests/test_error_kinds.py checks both ways). An
    exception carries its name as `kind`; a verifier result as the first item of its `error` pair. Harbor's names
    are here too, as its job folders write them (`exception_info.exception_type`)."""

    AGENT_TIMEOUT = "AgentTimeoutError"
    CONTEXT_OVERFLOW = "ContextOverflowError"
    CONTEXT_LENGTH_EXCEEDED = "ContextLengthExceededError"
    CONTEXT_WINDOW_EXCEEDED = "ContextWindowExceededError"
    OUTPUT_LENGTH_EXCEEDED = "OutputLengthExceededError"
    FORMAT = "FormatError"
    DISK_QUOTA = "DiskQuotaError"
    NON_ZERO_AGENT_EXIT_CODE = "NonZeroAgentExitCodeError"
    VERIFIER_TIMEOUT = "VerifierTimeoutError"
    HUNG_WITH_CHANGE = "HungWithChangeError"
    REWARD_FILE_NOT_FOUND = "RewardFileNotFoundError"
    NO_REWARD_WITH_CHANGE = "NoRewardWithChangeError"
    SANDBOX_LIMIT = "SandboxLimitError"
    CHANGE_TOO_LARGE = "ChangeTooLargeError"
    LIMITS_HIT_WITH_CHANGE = "LimitsHitWithChangeError"
    OUTLIVED_WITH_CHANGE = "OutlivedWithChangeError"
    CHANGED_OUTSIDE_TREE = "ChangedOutsideTreeError"
    ISOLATION = "IsolationError"
    DAEMON = "DaemonError"
    IMAGE_BUILD = "ImageBuildError"
    CONTAINER_START = "ContainerStartError"
    NODE_LOST = "NodeLostError"
    ENDPOINT = "EndpointError"
    ENDPOINT_AUTH = "EndpointAuthError"
    ENDPOINT_MODEL = "EndpointModelError"
    INVALID_TASK = "InvalidTaskError"
    GRADER_UNAVAILABLE = "GraderUnavailableError"
    DEADLINE_EXCEEDED = "DeadlineExceeded"


class Rule(NamedTuple):
    outcome: Outcome | None  # None: the verifier's reward decides (resolved / unresolved)
    retry: bool  # the harness retries the trial (with backoff) when this error ends a try
    graded: bool  # the verifier still runs after it (the sandbox is graded as the agent left it)
    meaning: str


# Keys are exception type names: trialbook's own (an exception's `kind` where it has one, else its
# class name), and Harbor's (`exception_info.exception_type` in imported job folders). Whether an
# error is retried is decided here, by name, never by the exception's class hierarchy.
# keyed by ErrorKind; looked up by the plain string an exception or a ledger row carries (a StrEnum is a str)
POLICY: dict[str, Rule] = {
    ErrorKind.AGENT_TIMEOUT: Rule(Outcome.AGENT_TIMEOUT, False, True, "agent ran past task timeout x multiplier"),
    ErrorKind.CONTEXT_OVERFLOW: Rule(Outcome.CONTEXT_OVERFLOW, False, True, "model context exceeded"),
    ErrorKind.CONTEXT_LENGTH_EXCEEDED: Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor: model context exceeded"),
    ErrorKind.CONTEXT_WINDOW_EXCEEDED: Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor/litellm: context exceeded"),
    ErrorKind.OUTPUT_LENGTH_EXCEEDED: Rule(Outcome.CONTEXT_OVERFLOW, False, True, "Harbor: output length exceeded"),
    ErrorKind.FORMAT: Rule(Outcome.FORMAT_ERROR, False, True, "model output not parseable"),
    ErrorKind.DISK_QUOTA: Rule(Outcome.DISK_QUOTA, False, True, "agent's sandbox wrote past [environment] disk_mb"),
    ErrorKind.NON_ZERO_AGENT_EXIT_CODE: Rule(None, False, True, "Harbor: agent process failed; its sandbox is graded"),
    ErrorKind.VERIFIER_TIMEOUT: Rule(
        Outcome.VERIFIER_TIMEOUT, False, False, "test.sh past its timeout twice: no grade"
    ),
    ErrorKind.HUNG_WITH_CHANGE: Rule(
        None, False, True, "test.sh past its timeout twice, in time without the change: 0"
    ),
    ErrorKind.REWARD_FILE_NOT_FOUND: Rule(
        Outcome.INFRA_ERROR, False, False, "test.sh wrote no reward and has no test lists"
    ),
    ErrorKind.NO_REWARD_WITH_CHANGE: Rule(None, False, True, "no reward with the change (twice), one without it: 0"),
    ErrorKind.SANDBOX_LIMIT: Rule(Outcome.INFRA_ERROR, False, False, "verifier hit task.toml memory_mb/pids_limit"),
    ErrorKind.CHANGE_TOO_LARGE: Rule(
        None, False, True, "agent's tree past the limits, time or size the image's fits: 0"
    ),
    ErrorKind.LIMITS_HIT_WITH_CHANGE: Rule(
        None, False, True, "tests outgrew memory_mb/pids_limit with the change only: 0"
    ),
    ErrorKind.OUTLIVED_WITH_CHANGE: Rule(
        None, False, True, "reward file read with processes the change left running: 0"
    ),
    ErrorKind.CHANGED_OUTSIDE_TREE: Rule(
        None, False, True, "reward file read, tests changed paths outside the tree: 0"
    ),
    ErrorKind.ISOLATION: Rule(
        Outcome.INFRA_ERROR, False, False, "agent's diff not carried to the verifier (workdir/git)"
    ),
    ErrorKind.DAEMON: Rule(Outcome.INFRA_ERROR, True, False, "Docker daemon/API error"),
    ErrorKind.IMAGE_BUILD: Rule(Outcome.INFRA_ERROR, True, False, "task image missing or its build failed"),
    ErrorKind.CONTAINER_START: Rule(Outcome.INFRA_ERROR, True, False, "sandbox container did not start"),
    ErrorKind.NODE_LOST: Rule(Outcome.INFRA_ERROR, True, False, "Ray: the trial's node or worker died; run elsewhere"),
    ErrorKind.ENDPOINT: Rule(Outcome.INFRA_ERROR, True, False, "model endpoint unreachable or failing (5xx)"),
    ErrorKind.ENDPOINT_AUTH: Rule(
        Outcome.INFRA_ERROR, False, False, "model endpoint answered 401/403: key missing/wrong"
    ),
    ErrorKind.ENDPOINT_MODEL: Rule(Outcome.INFRA_ERROR, False, False, "model endpoint answered 404: no such model"),
    ErrorKind.INVALID_TASK: Rule(Outcome.INFRA_ERROR, False, False, "task folder unusable (task.toml, test.sh)"),
    ErrorKind.GRADER_UNAVAILABLE: Rule(Outcome.INFRA_ERROR, False, False, "task has test lists; grader not importable"),
    ErrorKind.DEADLINE_EXCEEDED: Rule(
        Outcome.INCOMPLETE, False, False, "--deadline passed: trial stopped or never started"
    ),
}
UNEXPECTED = Rule(Outcome.INFRA_ERROR, False, False, "unexpected harness error / unknown exception type")
# what the verifier found in a graded trial that raised nothing, kept in its exception column so that `show` counts it:
# F2P passed but a P2P test failed; the canary, a test that must fail, reported passing (verify/canary.py)
FINDINGS = {
    "runner_subverted": "the verifier's canary, a test that must fail, was reported passing, or not at all while it"
    " is without the change: the runner was made to pass what fails (graded as failing)",
    "p2p_regression": "FAIL_TO_PASS passed but a PASS_TO_PASS test failed",
    "exit_status_contradicts_log": "a test command exited 0 after its runner reported a failure (an exit forced by the"
    " code under test: verify/privilege.py): graded as failing",
}
STILL_GRADED = frozenset(name for name, rule in POLICY.items() if rule.graded)
RETRYABLE = frozenset(name for name, rule in POLICY.items() if rule.retry)


def rule_for(exception_type: str) -> Rule:
    return POLICY.get(exception_type, UNEXPECTED)


def error_kind(exc: BaseException) -> str:
    """The policy key of an exception: its `kind` attribute where it has one, else its class name."""
    kind = getattr(exc, "kind", None)
    return kind if isinstance(kind, str) else type(exc).__name__


def classify(exception_type: str | None, reward: float | None) -> Outcome:
    """The outcome of a trial that ended with `exception_type` (or none) and got `reward` (or none)."""
    rule = rule_for(exception_type) if exception_type else None
    if rule is not None and not rule.graded:
        return rule.outcome or Outcome.INFRA_ERROR
    if reward is None:  # should have been graded, but the verifier produced nothing
        return Outcome.INFRA_ERROR
    if rule is not None and rule.outcome is not None:
        return rule.outcome
    return Outcome.RESOLVED if reward >= 1.0 else Outcome.UNRESOLVED


@dataclass(frozen=True)
class PolicyRow(Result):
    """One line of `trialbook policy`."""

    exception: str
    outcome: str
    retry: bool
    graded: bool
    meaning: str


def policy_rows() -> list[PolicyRow]:
    """The table as printed by `trialbook policy`."""
    by_reward = "resolved if reward >= 1.0 else unresolved"
    rows = [
        PolicyRow(name, rule.outcome.value if rule.outcome else by_reward, rule.retry, rule.graded, rule.meaning)
        for name, rule in POLICY.items()
    ]
    finding = "the verifier's reward decides (p2p_regression, runner_subverted)"
    rows.append(PolicyRow("(none)", by_reward, False, True, finding))
    other = UNEXPECTED.outcome.value if UNEXPECTED.outcome else ""
    rows.append(PolicyRow("(other)", other, UNEXPECTED.retry, False, UNEXPECTED.meaning))
    return rows


# ---- rewards ---------------------------------------------------------------------------------------


def pick_reward(rewards: dict[str, object] | None) -> float | None:
    """`reward` if present, else the only key (e.g. Harbor's `composite_score`), else None."""
    if not rewards:
        return None
    if "reward" in rewards:
        return float(rewards["reward"])  # type: ignore[arg-type]
    if len(rewards) == 1:
        return float(next(iter(rewards.values())))  # type: ignore[arg-type]
    return None


REWARD_FILES = ("reward.txt", "reward.json")  # what a verifier writes in /logs/verifier, read in this order


def parse_reward(files: dict[str, str]) -> float | None:
    """The verifier's reward files: reward.txt (a number) wins over reward.json (`reward`, or its only key)."""
    text = files.get("reward.txt", "").strip()
    if text:
        try:
            value = float(text.split()[0])
        except ValueError:
            return None
        return value if math.isfinite(value) else None  # 1e999 is not a reward
    raw = files.get("reward.json")
    if raw is None:
        return None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError:
        return None
    picked: object = pick_reward(data) if isinstance(data, dict) else data
    return float(picked) if isinstance(picked, int | float) and math.isfinite(picked) else None


# ---- the import contract ---------------------------------------------------------------------------

REWARD_RANGE: tuple[float, float] = (0.0, 1.0)  # unless the run declares another (`--reward-range`)


def reward_problem(reward: float, reward_range: tuple[float, float] = REWARD_RANGE) -> str | None:
    """Why `reward` is not acceptable (not finite, outside the run's range), or None."""
    lo, hi = reward_range
    if reward != reward or reward in (float("inf"), float("-inf")):
        return f"reward must be a finite number, got {reward}"
    if not lo <= reward <= hi:
        return f"reward {reward:g} is outside [{lo:g}, {hi:g}] (declare another range with --reward-range LO,HI)"
    return None


def scaled_reward(reward: float, reward_range: tuple[float, float] = REWARD_RANGE) -> float:
    """A reward of a declared range as the fraction of it the ledger stores, (reward - lo) / (hi - lo):
    every reader then takes 1.0 as full marks (resolved) and a mean reward as a fraction of the range."""
    lo, hi = reward_range
    return reward if (lo, hi) == REWARD_RANGE else (reward - lo) / (hi - lo)


def contradiction(
    outcome: str | None, resolved: bool | None, reward: float | None, full: float = REWARD_RANGE[1]
) -> str | None:
    """How the fields a trial gives of its result disagree (naming both), or None.

    A trial counts as resolved when it is graded and its reward is full marks (`full`: 1.0, or the top
    of a declared range; `is_resolved`), so: `resolved` true needs reward >= full and false needs
    reward < full; outcome `resolved` needs reward >= full and `resolved` not false; outcome
    `unresolved` needs reward < full and `resolved` not true; an ungraded outcome cannot be `resolved`
    true. Partial rewards are not resolved, and agree with `resolved: false` and outcome `unresolved`.
    """
    if resolved is not None and reward is not None and resolved != (reward >= full):
        return f"'resolved' {str(resolved).lower()} contradicts 'reward' {reward:g}"
    if outcome is None:
        return None
    if resolved is not None:
        if (outcome == Outcome.RESOLVED and not resolved) or (outcome == Outcome.UNRESOLVED and resolved):
            return f"'outcome' {outcome} contradicts 'resolved' {str(resolved).lower()}"
        if resolved and outcome not in GRADED:
            return f"'outcome' {outcome} (ungraded) contradicts 'resolved' true"
    if reward is not None:
        if outcome == Outcome.RESOLVED and reward < full:
            return f"'outcome' resolved contradicts 'reward' {reward:g}"
        if outcome == Outcome.UNRESOLVED and reward >= full:
            return f"'outcome' unresolved contradicts 'reward' {reward:g}"
    return None


# ---- per-test statuses and the P2P-regression rule -------------------------------------------------

TestStatus = Literal["pass", "fail", "error", "missing"]
NOT_PASSING: tuple[str, ...] = ("fail", "error", "missing")  # a test in one of these did not pass
TestStatuses = dict[str, dict[str, str]]  # {"FAIL_TO_PASS": {test: status}, "PASS_TO_PASS": {...}}
FAIL_TO_PASS, PASS_TO_PASS = "FAIL_TO_PASS", "PASS_TO_PASS"


def p2p_regression(tests: TestStatuses | None) -> bool:
    """The agent fixed its target but broke something else: there is at least one FAIL_TO_PASS test,
    none of them is in NOT_PASSING, and some PASS_TO_PASS test is.

    Statuses outside NOT_PASSING ("pass", "skipped") do not fail a test. Trials are counted as P2P
    regressions when they are also graded (`is_graded`); `ledger.queries.P2P_REGRESSION_SQL` is this
    rule in SQL (tested to agree).
    """
    if not isinstance(tests, dict):
        return False
    f2p, p2p = tests.get(FAIL_TO_PASS), tests.get(PASS_TO_PASS)
    if not isinstance(f2p, dict) or not isinstance(p2p, dict) or not f2p:
        return False
    return not any(s in NOT_PASSING for s in f2p.values()) and any(s in NOT_PASSING for s in p2p.values())


# What a run does when a component goes away under it (docs/reference/outcomes.md, "Faults mid-run"); each is tested
# with the real component (tests/faults/), ending with `trialbook ledger check`, every (task, attempt) once, no
# container left.
FAULTS: dict[str, str] = {
    "the Docker daemon stops or restarts": "the trials it cut (their containers killed from outside, the API gone)"
    " are DaemonError, never graded; each is retried once the daemon answers again, waiting up to"
    " TRIALBOOK_DAEMON_WAIT_S (120 s) with one line `container engine URL does not answer`; a daemon that stays away"
    " costs those trials (infra_error) and --stop-after-errors stops the run; `resume` runs the rest",
    "the network bridge or a Docker network is removed": "a sandbox that cannot start is a ContainerStartError"
    " naming the bridge (`the network bridge NAME is gone from this host`) or the network; trialbook-unroutable,"
    " trialbook's own, is made again by the next try; a gone bridge is the daemon's to make again (restart it):"
    " --stop-after-errors stops the run with that line as its cause, then `resume` and `rerun --where infra_error`",
    "the PostgreSQL ledger restarts or its connection drops": "the finished trials' transaction waits for the server,"
    " up to TRIALBOOK_LEDGER_WAIT_S (120 s), with one line `connection lost ... waiting up to Ns`, and is made again"
    " (a trial whose lost commit did land is found by its trial name, not written twice); the trials keep running"
    " meanwhile. Past the wait the run stops with one line; `resume` runs what has no record",
    "the runs folder fills (or turns read-only)": "the trials are recorded in the ledger all the same; a trial folder"
    " that cannot be written is removed whole (none is left half-written), one line says so, the count is in the"
    " run's last line and each trial's extra.warnings; `resume` after space is freed writes the missing folders"
    " again from the ledger (and stops with one line while it still cannot)",
    "several runs write one SQLite ledger at once": "each trial is one transaction (its row, its logs, its run's"
    " summary); writers queue on SQLite's lock (busy_timeout 30 s) and readers (`serve`, `compare`) see a trial"
    " whole or not at all",
    "the driver is killed (kill -9)": "at most the trials in flight are lost (not recorded); `resume` removes their"
    " containers and runs exactly the (task, attempt) pairs with no record",
}

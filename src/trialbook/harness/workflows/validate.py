"""`trialbook validate`: run oracle and nop N times per task and give each task one verdict.

The trials go through the harness's own run machinery (`harness.run.execute.execute`) into one ledger run of
kind `validate` per image variant: oracle trials are attempts 0..N-1, nop trials N..2N-1 (each
trial's `extra.agent` names its agent too). The verdict comes from `RULES`, the one table of
rules, first match wins.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from trialbook.agents import get_agent
from trialbook.errors import UserError
from trialbook.extra_schema import read_extra
from trialbook.harness.placement.choice import Where, make_executor
from trialbook.harness.run.bootstrap import RunStart, prepare
from trialbook.harness.run.config import PlannedTrial, RunConfig
from trialbook.harness.run.execute import execute
from trialbook.harness.run.paths import DEFAULT_RUNS_DIR
from trialbook.harness.run.stack import connect, sandbox_stack
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.store import Ledger
from trialbook.names import safe_name
from trialbook.outcomes import NOT_PASSING, Outcome, is_resolved
from trialbook.records import Run
from trialbook.result_types import ABSENT, Absent, Result, optional
from trialbook.tasks import TaskSpec
from trialbook.verify.gold import config_line, gold_statuses
from trialbook.verify.leaks import TaskLeaks

AGENTS = ("oracle", "nop")
NOT_RUN = (Outcome.INFRA_ERROR.value, Outcome.INCOMPLETE.value)
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")


@dataclass(frozen=True)
class AgentSummary(Result):
    """One agent's repeats on one task."""

    repeats: int
    resolved: int
    outcomes: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class TaskVerdict(Result):
    """One task's verdict. Its JSON `details` holds the rule's own keys, then each agent's summary."""

    task_id: str
    verdict: str  # a RULES verdict
    details: dict[str, Any]  # what the rule found (`summary`: one line), by rule
    agents: dict[str, AgentSummary]
    variant: str | None = optional()
    image: str | None | Absent = optional(default=ABSENT, keep_none=True)  # with variants: None = own image
    leaks: TaskLeaks | None = optional()  # --leaks: the scan of the task's image for its solution

    @property
    def summary(self) -> str:
        return str(self.details["summary"])

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        out["details"] = {**out["details"], **out.pop("agents")}
        return out


@dataclass(frozen=True)
class VariantDifference(Result):
    task_id: str
    agent: str
    test: str
    statuses: dict[str, str]  # variant label -> statuses across repeats ("pass", "fail/pass", "not run")


@dataclass(frozen=True, kw_only=True)
class ValidateResult(Result):
    tasks: list[TaskVerdict]
    verdicts: dict[str, int]
    variant_differences: list[VariantDifference]
    runs: dict[str, str]  # variant label (or "default") -> ledger run
    repeats: int
    timeout_multiplier: float


@dataclass(frozen=True)
class Variant:
    label: str | None  # None: the tasks' own image / Dockerfile, no variants asked for
    image: str | None  # None: the task's own environment


def parse_variants(items: list[str] | None) -> list[Variant]:
    """`LABEL=IMAGE` strings (an empty IMAGE means the task's own environment)."""
    variants: list[Variant] = []
    for item in items or []:
        label, sep, image = item.partition("=")
        label, image = label.strip(), image.strip()
        if not sep or not LABEL_RE.match(label):
            raise UserError(f"--image-variant must be LABEL=IMAGE with LABEL in [A-Za-z0-9_.-], got '{item}'")
        if label in {v.label for v in variants}:
            raise UserError(f"--image-variant label '{label}' given twice")
        variants.append(Variant(label, image or None))
    return variants


# ---- per-agent view of one task's trials -------------------------------------------------------


@dataclass
class AgentView:
    """One agent's repeats on one task."""

    trials: list[TrialRow] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.trials)

    @property
    def outcomes(self) -> dict[str, int]:
        return dict(Counter(t.outcome for t in self.trials))

    @property
    def resolved(self) -> int:
        return sum(is_resolved(t.outcome, t.reward) for t in self.trials)

    def statuses(self) -> dict[str, set[str]]:
        """test -> every status it had across the repeats that graded it."""
        out: dict[str, set[str]] = {}
        for t in self.trials:
            for group in (t.tests or {}).values():
                for test, status in group.items():
                    out.setdefault(test, set()).add(status)
        return out

    def group_tests(self, group: str) -> set[str]:
        return {test for t in self.trials for test in ((t.tests or {}).get(group) or {})}

    def results_differ(self) -> bool:
        return len({(t.outcome, is_resolved(t.outcome, t.reward)) for t in self.trials}) > 1

    def flaky_tests(self) -> list[str]:
        graded = [t for t in self.trials if t.tests]
        if len(graded) < 2:
            return []
        return sorted(test for test, s in self.statuses().items() if len(s) > 1)

    def summary(self) -> AgentSummary:
        return AgentSummary(repeats=self.n, resolved=self.resolved, outcomes=self.outcomes)


@dataclass
class TaskView:
    task_id: str
    agents: dict[str, AgentView]
    leaks: TaskLeaks | None = None  # --leaks: the image's scan (verify/leaks.py)

    def all_trials(self) -> list[TrialRow]:
        return [t for a in self.agents.values() for t in a.trials]


# ---- the rules ------------------------------------------------------------------------------------


def _not_run(v: TaskView) -> dict[str, Any] | None:
    bad = [t for t in v.all_trials() if t.outcome in NOT_RUN]
    absent = [name for name, a in v.agents.items() if not a.trials]
    if absent and not bad:  # nothing recorded to judge by: never "ok"
        summary = f"no trial of {' and '.join(absent)} was recorded"
        return {"summary": summary, "errors": [f"no {n} trial" for n in absent]}
    if not bad:
        return None
    reasons = sorted({f"{t.exception or t.outcome}: {t.exception_message or ''}".strip() for t in bad})
    return {"summary": f"{len(bad)} trial(s) could not run: {reasons[0]}", "errors": reasons}


def _leaky(v: TaskView) -> dict[str, Any] | None:
    if v.leaks is None or v.leaks.verdict != "leaky":
        return None
    return {"summary": v.leaks.summary, "leak_hits": [h.where for h in v.leaks.hits]}


def _verifier_timeout(v: TaskView) -> dict[str, Any] | None:
    hit = {name: sum(t.outcome == Outcome.VERIFIER_TIMEOUT.value for t in a.trials) for name, a in v.agents.items()}
    if not any(hit.values()):
        return None
    limit = next(read_extra(t).verifier_timeout_s for t in v.all_trials())
    where = ", ".join(f"{name} {k}/{v.agents[name].n}" for name, k in hit.items() if k)
    return {"summary": f"test.sh ran past its {_secs(limit)} timeout ({where}): no grade", "timeouts": hit}


def _flaky(v: TaskView) -> dict[str, Any] | None:
    per_agent = {name: a.flaky_tests() for name, a in v.agents.items()}
    differ = [name for name, a in v.agents.items() if a.results_differ()]
    if not differ and not any(per_agent.values()):
        return None
    tests = sorted({t for ts in per_agent.values() for t in ts})
    agents = [n for n in AGENTS if n in differ or per_agent[n]]
    parts = []
    for name in agents:
        a = v.agents[name]
        what = [f"outcomes {_outcomes(a)}"] if name in differ else []
        what += [f"{t} {'/'.join(sorted(a.statuses()[t]))}" for t in per_agent[name]]
        parts.append(f"{name} x{a.n}: {'; '.join(what)}")
    return {
        "summary": "changes across repeats: " + " | ".join(parts),
        "flaky_tests": tests,
        "flaky_by_agent": {n: per_agent[n] for n in agents},
        "results_differ": differ,
    }


def _failing(a: AgentView) -> list[str]:
    bad = {test: s & set(NOT_PASSING) for test, s in a.statuses().items()}
    return sorted(f"{test} ({'/'.join(sorted(s))})" for test, s in bad.items() if s)


def _oracle_fails(v: TaskView) -> dict[str, Any] | None:
    oracle = v.agents["oracle"]
    if oracle.resolved == oracle.n:
        return None
    failing = _failing(oracle)
    details: dict[str, Any] = {"failing_tests": failing}
    timeouts = [t for t in oracle.trials if t.outcome == Outcome.AGENT_TIMEOUT.value]
    if timeouts:
        extra = read_extra(timeouts[0])
        budget, mult = extra.agent_timeout_s, extra.timeout_multiplier or 1.0
        details["agent_timeout"] = len(timeouts)
        details["summary"] = (
            f"agent_timeout {len(timeouts)}/{oracle.n}: the solution was stopped at its agent time"
            f" ({_secs(budget)}, x{mult:g}), true at this multiplier;"
            " a larger --timeout-multiplier tells slow from wrong"
        )
    else:
        shown = ", ".join(failing) if failing else "no per-test result (reward only)"
        statuses = oracle.statuses()
        if statuses and all(s == {"missing"} for s in statuses.values()):
            shown = f"every test missing from the log (no per-test result lines: lost -rA? collection error?): {shown}"
        details["summary"] = f"oracle resolved {oracle.resolved}/{oracle.n} ({_outcomes(oracle)}); failing: {shown}"
    return details


def _nop_passes(v: TaskView) -> dict[str, Any] | None:
    nop = v.agents["nop"]
    statuses = nop.statuses()
    f2p = sorted(t for t in nop.group_tests("FAIL_TO_PASS") if statuses.get(t) == {"pass"})
    if not nop.resolved and not f2p:
        return None
    if nop.resolved:
        summary = f"doing nothing resolves the task ({nop.resolved}/{nop.n}): the tests do not test the fix"
    else:
        summary = f"FAIL_TO_PASS test(s) pass without the fix: {', '.join(f2p)}"
    return {"summary": summary, "f2p_passing_without_fix": f2p}


def _ok(v: TaskView) -> dict[str, Any]:
    o, n = v.agents["oracle"], v.agents["nop"]
    note = "" if o.n > 1 else " (one repeat: flakiness not checked)"
    return {"summary": f"oracle resolved {o.resolved}/{o.n}, nop {n.resolved}/{n.n}{note}"}


class VerdictRule(NamedTuple):
    verdict: str
    meaning: str
    check: Callable[[TaskView], dict[str, Any] | None]


RULES: tuple[VerdictRule, ...] = (
    VerdictRule(
        "infra_error", "a trial could not run (invalid task folder, missing image, daemon): no verdict", _not_run
    ),
    VerdictRule("leaky", "the solution is in the agent's image (validate --leaks: verify/leaks.py)", _leaky),
    VerdictRule("verifier_timeout", "test.sh ran past [verifier] timeout_sec in some repeat", _verifier_timeout),
    VerdictRule("flaky", "the same agent got different results or per-test statuses across repeats", _flaky),
    VerdictRule("oracle_fails", "the reference solution is not resolved (failing tests listed)", _oracle_fails),
    VerdictRule("nop_passes", "doing nothing resolves the task or passes FAIL_TO_PASS tests", _nop_passes),
    VerdictRule("ok", "oracle always resolved, nop never, per-test statuses stable", _ok),
)


def _secs(value: float | None) -> str:
    return "?" if value is None else f"{value:g} s"


def _outcomes(a: AgentView) -> str:
    return ", ".join(f"{k} {c}" for k, c in sorted(a.outcomes.items()))


def verdict(view: TaskView) -> tuple[str, dict[str, Any]]:
    """The first matching rule's verdict and its details (the rule's own keys, `summary` among them)."""
    for rule in RULES:
        details = rule.check(view)
        if details is not None:
            # the oracle's statuses other than PASSED that the strict verdict is to be anchored to (verify/gold.py)
            if gold := gold_statuses(t.extra for t in view.agents["oracle"].trials):
                details = {**details, "gold_statuses": gold, "config_json": config_line(gold)}
            return rule.verdict, details
    raise AssertionError("the last rule always matches")


def task_views(trials: list[TrialRow], task_ids: list[str]) -> list[TaskView]:
    views = {tid: TaskView(tid, {a: AgentView() for a in AGENTS}) for tid in task_ids}
    for t in trials:
        agent = read_extra(t).agent
        if t.task_id in views and agent in AGENTS:
            views[t.task_id].agents[agent].trials.append(t)
    return [views[tid] for tid in task_ids]


def variant_differences(per_variant: dict[str, list[TaskView]]) -> list[VariantDifference]:
    """Per task, agent and test: the statuses under each variant, where they are not the same."""
    labels = list(per_variant)
    if len(labels) < 2:
        return []
    rows = []
    by_task = {label: {v.task_id: v for v in views} for label, views in per_variant.items()}
    for task_id in by_task[labels[0]]:
        for agent in AGENTS:
            statuses = {label: by_task[label][task_id].agents[agent].statuses() for label in labels}
            tests = sorted(set().union(*statuses.values()))
            for test in tests:
                seen = {label: "/".join(sorted(statuses[label].get(test, {"not run"}))) for label in labels}
                if len(set(seen.values())) > 1:
                    rows.append(VariantDifference(task_id=task_id, agent=agent, test=test, statuses=seen))
    return rows


# ---- running ------------------------------------------------------------------------------------


@dataclass
class ValidateOptions:
    tasks_dir: Path
    repeats: int = 3
    timeout_multiplier: float = 1.0
    where: Where = field(default_factory=lambda: Where(concurrency=2))  # where its trials run
    runs_dir: Path = DEFAULT_RUNS_DIR
    tasks: list[str] | None = None
    run: str | None = None
    replace: bool = False
    leaks: bool = False  # also scan each task's image for its solution (verify/leak_scan.py)


def default_run_name(tasks_dir: Path) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return safe_name(f"validate-{tasks_dir.resolve().name}-{stamp}")


def _run_variant(ledger: Ledger, start: RunStart, name: str, variant: Variant, opts: ValidateOptions) -> int:
    config, tasks = start.config, start.tasks
    run_tasks = [t.model_copy(update={"image": variant.image}) if variant.image and isinstance(t, TaskSpec) else t
                 for t in tasks]  # fmt: skip
    specs = [t for t in run_tasks if isinstance(t, TaskSpec)]
    stored = {  # no `agent` key: `resume`/`rerun` refuse a validate run instead of re-running one agent
        "validate": True,
        "tasks_dir": config.tasks_dir,
        "tasks": config.tasks,
        "runs_dir": config.runs_dir,  # where its trial folders are (`runs rename` moves them: ledger/admin.py)
        "repeats": opts.repeats,
        "timeout_multiplier": opts.timeout_multiplier,
        "agents": {
            "oracle": f"attempts 0..{opts.repeats - 1}",
            "nop": f"attempts {opts.repeats}..{2 * opts.repeats - 1}",
        },
        "image_variant": {"label": variant.label, "image": variant.image},
        **opts.where.settings(),  # where its trials ran (backend, engines, concurrency), as a run's config says
    }
    stack = sandbox_stack(start.executor, "oracle+nop", specs, {})
    run = Run(name=name, kind="validate", config=stored, stack=stack, source=config.tasks_dir)
    with start.opened(ledger, run, opts.replace) as run_id:
        for k, agent in enumerate(AGENTS):
            plans = [PlannedTrial(t, k * opts.repeats + a) for a in range(opts.repeats) for t in run_tasks]
            agent_config = config.model_copy(update={"agent": agent})
            execute(ledger, start.executor, run_id, name, agent_config, plans, agent=get_agent(agent, {}))
    final = ledger.get_run(name).stack
    with ledger.transaction() as conn:
        ledger.set_run_stack(conn, run_id, {**final, "agent": "oracle+nop", "image_variant": variant.label})
    return run_id


def _scan_leaks(start: RunStart, variant: Variant, backend: str) -> dict[str, TaskLeaks]:
    """--leaks: each task's image (the variant's, where it names one) scanned on this machine's `backend`."""
    from trialbook.verify.leak_scan import scan_task

    engine = connect(backend)
    specs = [t for t in start.tasks if isinstance(t, TaskSpec)]
    return {t.task_id: scan_task(engine, t.model_copy(update={"image": variant.image or t.image})) for t in specs}


def validate(ledger: Ledger, opts: ValidateOptions, image_variants: list[str] | None = None) -> ValidateResult:
    """Validate every task under each image variant."""
    variants = parse_variants(image_variants) or [Variant(None, None)]
    config = RunConfig(
        tasks_dir=str(opts.tasks_dir.resolve()),
        agent="oracle",
        attempts=opts.repeats,
        timeout_multiplier=opts.timeout_multiplier,
        tasks=opts.tasks,
        runs_dir=str(opts.runs_dir.resolve()),
        **opts.where.settings(),
    )
    # a task that cannot be graded is the task's infra_error verdict, not a refusal: grader=False
    start = prepare(config, make_executor(opts.where), agent=False, grader=False)
    task_ids = [t.task_id for t in start.tasks]
    start.config = config.model_copy(update={"tasks": task_ids})
    base = opts.run or default_run_name(opts.tasks_dir)
    out: list[TaskVerdict] = []
    per_variant: dict[str, list[TaskView]] = {}
    runs: dict[str, str] = {}
    for variant in variants:
        name = base if variant.label is None else f"{base}-{variant.label}"
        run_id = _run_variant(ledger, start, name, variant, opts)
        views = task_views(list(ledger.trial_rows(run_id)), task_ids)
        if opts.leaks:
            found = _scan_leaks(start, variant, opts.where.backend)
            for view in views:
                view.leaks = found.get(view.task_id)
        per_variant[variant.label or "default"] = views
        runs[variant.label or "default"] = name
        for view in views:
            v, details = verdict(view)
            out.append(TaskVerdict(
                task_id=view.task_id, verdict=v, details=details,
                agents={name: a.summary() for name, a in view.agents.items()},
                variant=variant.label, image=ABSENT if variant.label is None else variant.image, leaks=view.leaks,
            ))  # fmt: skip
    return ValidateResult(
        tasks=out, verdicts=dict(Counter(row.verdict for row in out)),
        variant_differences=variant_differences(per_variant), runs=runs, repeats=opts.repeats,
        timeout_multiplier=opts.timeout_multiplier,
    )  # fmt: skip

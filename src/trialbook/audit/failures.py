"""`audit`: failures that may not be the agent's fault.

(a) P2P penalties (every F2P test passes, some P2P test does not), by repo and by test;
(b) the log signatures of `signatures.SIGNATURES`, with the share of P2P penalties each explains;
(c) suspect tests: P2P tests that fail in most trials that run them whatever the patch, and
    (with `vs`) P2P tests that fail here but pass in another run on the same task.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import and_, func, select

from trialbook.audit.regrade import DEFAULT_JOBS, Evidence, bare_trial, evidence
from trialbook.audit.signatures import BY_NAME, SIGNATURES, matches
from trialbook.ledger.rows import TrialRow
from trialbook.ledger.schema import trials
from trialbook.ledger.store import Ledger
from trialbook.outcomes import NOT_PASSING, is_graded, p2p_regression
from trialbook.result_types import Result, optional

MIN_TRIALS = 2  # a test must run in at least this many trials before "fails in most" means anything


@dataclass(frozen=True)
class PenaltyTest(Result):
    task_id: str
    test: str
    trials: int


@dataclass(frozen=True)
class P2PPenalties(Result):
    count: int
    share_of_graded: float | None
    by_repo: dict[str, int]  # most first
    by_test: list[PenaltyTest]  # most first


@dataclass(frozen=True)
class SignatureCount(Result):
    meaning: str
    artifact: bool  # a verifier artifact, not the agent's failure
    trials: int
    unresolved: int
    resolved: int
    share_of_resolved: float | None
    p2p_penalties: int
    share_of_p2p_penalties: float | None


@dataclass(frozen=True)
class Explained(Result):
    p2p_penalties: int
    of_p2p_penalties: int
    share: float | None
    unresolved: int
    of_unresolved: int


@dataclass(frozen=True)
class SignatureTrial(Result):
    task_id: str
    attempt: int
    signatures: list[str]


@dataclass(frozen=True, kw_only=True)
class SuspectTest(Result):
    """A P2P test failing in most trials (`tasks` set), or failing here but passing in `--vs` (`task_id` set)."""

    test: str
    task_id: str | None = optional()
    reason: str
    failed: int
    trials: int
    tasks: list[str] | None = optional()
    vs_passed: int | None = optional()
    vs_trials: int | None = optional()


@dataclass(frozen=True, kw_only=True)
class AuditResult(Result):
    run: str
    vs: str | None
    # "no_verifier_logs": nothing was read, so the zeros below mean "not looked at", not "clean"
    status: str
    trials: int
    graded: int
    with_log: int
    regraded_from_log: int
    p2p_penalties: P2PPenalties
    by_signature: dict[str, SignatureCount]
    explained_by_artifacts: Explained
    signature_trials: list[SignatureTrial]
    suspect_tests: list[SuspectTest]
    artifact_tasks: list[str]  # tasks with an artifact signature in some trial (`--write-tasks`)


def p2p_penalty(ev: Evidence) -> bool:
    """A graded trial whose statuses (from the re-grade where a log exists) are a `p2p_regression`."""
    return is_graded(ev.trial.outcome) and p2p_regression(ev.tests)


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def _p2p_statuses(ev: Evidence) -> dict[str, str]:
    return (ev.tests or {}).get("PASS_TO_PASS") or {}


def _fails_in_most(items: list[Evidence], min_trials: int) -> list[SuspectTest]:
    runs: Counter[str] = Counter()
    fails: Counter[str] = Counter()
    tasks: dict[str, set[str]] = defaultdict(set)
    for ev in items:
        for test, status in _p2p_statuses(ev).items():
            if status == "skipped":
                continue
            runs[test] += 1
            tasks[test].add(ev.trial.task_id)
            fails[test] += status in NOT_PASSING
    out = [
        SuspectTest(test=test, reason="fails_in_most_trials", failed=fails[test], trials=n, tasks=sorted(tasks[test]))
        for test, n in runs.items()
        if n >= min_trials and fails[test] * 2 > n
    ]
    return sorted(out, key=lambda r: (-r.failed, r.test))


def _fails_here_passes_there(items: list[Evidence], other: list[Evidence], vs: str) -> list[SuspectTest]:
    def tally(evs: list[Evidence]) -> dict[tuple[str, str], list[int]]:
        out: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # [failed, trials]
        for ev in evs:
            for test, status in _p2p_statuses(ev).items():
                if status != "skipped":
                    cell = out[(ev.trial.task_id, test)]
                    cell[0] += status in NOT_PASSING
                    cell[1] += 1
        return out

    here, there = tally(items), tally(other)
    rows = []
    for (task_id, test), (failed, n) in here.items():
        other_cell = there.get((task_id, test))
        if other_cell is None or failed * 2 <= n or other_cell[0] > 0:
            continue
        rows.append(SuspectTest(
            test=test, task_id=task_id, reason=f"fails_here_passes_in:{vs}", failed=failed, trials=n,
            vs_passed=other_cell[1], vs_trials=other_cell[1],
        ))  # fmt: skip
    return sorted(rows, key=lambda r: (r.task_id or "", r.test))


def _light(stream: Iterator[Evidence]) -> Iterator[Evidence]:
    """Match signatures as trials stream by, then drop the logs (a run's logs can be gigabytes)."""
    for ev in stream:
        ev.signatures = matches(ev)
        ev.had_log = ev.log is not None
        ev.log = ev.side_log = None
        ev.status_map = {}
        yield ev


@dataclass
class _BareGroup:
    """Bare trials (regrade.bare_trial) sharing every column a signature check can read on them."""

    ev: Evidence  # one of them (id 0, no task): what `matches` and the counts look at
    n: int
    signatures: list[str]
    trials: list[tuple[int, str, int]] = field(default_factory=list)  # (id, task, attempt) when it has a signature


def _bare_groups(ledger: Ledger, run_id: int, per_trial: bool) -> list[_BareGroup]:
    """A run's bare trials counted in SQL by (outcome, reward, repo, exception): without logs, tests or
    extra, a trial's evidence is those columns, so one `matches` per group stands for all its trials."""
    t = trials.c
    key = (t.outcome, t.reward, t.repo, t.exception)
    mine = and_(t.run_id == run_id, t.superseded_by.is_(None), bare_trial())
    out = []
    with ledger.engine.connect() as conn:
        for outcome, reward, repo, exception, n in conn.execute(select(*key, func.count()).where(mine).group_by(*key)):
            row = TrialRow(0, run_id, "", 0, repo, outcome, reward, None, None, None, exception, None, None, None,
                           None, None, None, None, None, None)  # fmt: skip
            ev = Evidence(row, None, None, None, None, {})
            group = _BareGroup(ev, int(n), matches(ev))
            if group.signatures and per_trial:  # signature_trials lists them one by one
                values = (outcome, reward, repo, exception)
                same = [c.is_(None) if v is None else c == v for c, v in zip(key, values, strict=True)]
                q = select(t.id, t.task_id, t.attempt).where(mine, *same)
                group.trials = [(int(i), task, int(att)) for i, task, att in conn.execute(q)]
            out.append(group)
    return out


def audit_run(
    ledger: Ledger,
    run_name: str,
    vs: str | None = None,
    min_trials: int = MIN_TRIALS,
    jobs: int = DEFAULT_JOBS,
    per_trial: bool = True,
) -> AuditResult:
    """The audit; `per_trial=False` (the web page, which shows counts only) leaves out the trials without
    logs from `signature_trials` and `artifact_tasks`, and so never lists a million of them."""
    run = ledger.get_run(run_name)
    other_run = ledger.get_run(vs) if vs else None
    items = list(_light(evidence(ledger, run.id, jobs, skip_bare=True)))
    bare = _bare_groups(ledger, run.id, per_trial)
    found = {id(ev): ev.signatures for ev in items}
    penalties = [ev for ev in items if p2p_penalty(ev)]  # a bare trial has no test statuses: never a penalty

    by_repo = Counter(ev.trial.repo or "?" for ev in penalties)
    by_test = Counter(
        (ev.trial.task_id, t) for ev in penalties for t, s in _p2p_statuses(ev).items() if s in NOT_PASSING
    )
    by_signature: dict[str, SignatureCount] = {}
    n_resolved = sum(1 for ev in items if ev.recorded_resolved) + sum(g.n for g in bare if g.ev.recorded_resolved)
    for sig in SIGNATURES:
        hits = [ev for ev in items if sig.name in found[id(ev)]]
        groups = [g for g in bare if sig.name in g.signatures]
        resolved = sum(1 for ev in hits if ev.recorded_resolved) + sum(g.n for g in groups if g.ev.recorded_resolved)
        n_hits = len(hits) + sum(g.n for g in groups)
        pen = sum(1 for ev in penalties if sig.name in found[id(ev)])
        by_signature[sig.name] = SignatureCount(
            meaning=sig.meaning, artifact=sig.artifact, trials=n_hits, unresolved=n_hits - resolved,
            resolved=resolved, share_of_resolved=_share(resolved, n_resolved),
            p2p_penalties=pen, share_of_p2p_penalties=_share(pen, len(penalties)),
        )  # fmt: skip

    def artifact(names: list[str]) -> bool:
        return any(BY_NAME[n].artifact for n in names)

    explained = sum(1 for ev in penalties if artifact(found[id(ev)]))
    unresolved = [ev for ev in items if is_graded(ev.trial.outcome) and not ev.recorded_resolved]
    bare_unresolved = [g for g in bare if is_graded(g.ev.trial.outcome) and not g.ev.recorded_resolved]
    n_unresolved = len(unresolved) + sum(g.n for g in bare_unresolved)
    unresolved_explained = sum(1 for ev in unresolved if artifact(found[id(ev)]))
    unresolved_explained += sum(g.n for g in bare_unresolved if artifact(g.signatures))

    suspects = _fails_in_most(items, min_trials)
    if other_run is not None:
        other = list(_light(evidence(ledger, other_run.id, jobs, skip_bare=True)))
        suspects += _fails_here_passes_there(items, other, vs or "")

    graded = sum(1 for ev in items if is_graded(ev.trial.outcome))
    graded += sum(g.n for g in bare if is_graded(g.ev.trial.outcome))
    with_log = sum(1 for ev in items if ev.had_log)
    signed = [(ev.trial.id, ev.trial.task_id, ev.trial.attempt, found[id(ev)]) for ev in items if found[id(ev)]]
    signed += [(i, task, att, g.signatures) for g in bare for i, task, att in g.trials]
    signed.sort(key=lambda row: row[0])  # trial id order, as the trials were written
    artifact_tasks = sorted({task for _, task, _, names in signed if artifact(names)})
    return AuditResult(
        # "no_verifier_logs": nothing was read, so the zeros mean "not looked at", not "clean"
        run=run_name, vs=vs, status="audited" if with_log else "no_verifier_logs",
        trials=len(items) + sum(g.n for g in bare),
        graded=graded, with_log=with_log, regraded_from_log=sum(1 for ev in items if ev.grade is not None),
        p2p_penalties=P2PPenalties(
            count=len(penalties), share_of_graded=_share(len(penalties), graded),
            by_repo=dict(by_repo.most_common()),
            by_test=[PenaltyTest(task_id=k[0], test=k[1], trials=n) for k, n in by_test.most_common()],
        ),
        by_signature=by_signature,
        explained_by_artifacts=Explained(
            p2p_penalties=explained, of_p2p_penalties=len(penalties), share=_share(explained, len(penalties)),
            unresolved=unresolved_explained, of_unresolved=n_unresolved,
        ),
        signature_trials=[SignatureTrial(task, att, names) for _, task, att, names in signed],
        suspect_tests=suspects, artifact_tasks=artifact_tasks,  # artifact_tasks: `--write-tasks`
    )  # fmt: skip

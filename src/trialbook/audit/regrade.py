"""Re-grade a run's trials from their stored verifier logs and compare with the recorded outcomes.

The evidence for one trial (its log, its F2P/P2P lists, trialbook's grade) is built once here
and reused by `audit`, so both commands judge a trial the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from multiprocessing import get_context
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, not_, select

from trialbook.extra_schema import read_extra
from trialbook.ledger import queries, schema
from trialbook.ledger.rows import TaskLists, TrialRow
from trialbook.ledger.store import Ledger
from trialbook.outcomes import NOT_PASSING, is_graded, is_resolved
from trialbook.result_types import Result
from trialbook.verify import canary as canaries

if TYPE_CHECKING:
    from trialbook.verify.grading import GradeResult, ParsedLog

# Artifact names that hold a verifier's test output, most specific first
# (`import swebench --logs` stores test_output.txt; Harbor-style verifiers write test-stdout.txt).
LOG_ARTIFACTS: tuple[str, ...] = ("test_output.txt", "verifier/test-stdout.txt", "test-stdout.txt", "verifier.log")
# Other logs a signature may be found in (the harness's own log around the verifier).
SIDE_ARTIFACTS: tuple[str, ...] = ("run_instance.log",)
GROUPS = ("FAIL_TO_PASS", "PASS_TO_PASS")
CHUNK = 200  # trials whose logs are read in one query
PARALLEL_MIN = 400  # below this many logs, worker processes cost more than they save
DEFAULT_JOBS = min(os.cpu_count() or 1, 8)


@dataclass
class Evidence:
    """One trial with what its verifier left behind."""

    trial: TrialRow
    lists: TaskLists | None
    log: str | None  # the verifier's test output
    side_log: str | None  # e.g. run_instance.log
    grade: GradeResult | None  # trialbook's grade of `log` (None: no log or no test lists)
    status_map: dict[str, str]  # what the parser saw, test -> PASSED/FAILED/...
    signatures: list[str] = field(default_factory=list)  # set by audit
    had_log: bool = False  # set by audit, which drops the log text once matched

    @property
    def recorded_resolved(self) -> bool:
        return is_resolved(self.trial.outcome, self.trial.reward)

    @property
    def tests(self) -> dict[str, dict[str, str]] | None:
        """Per-test statuses: trialbook's grade where a log exists, else what was recorded."""
        if self.grade is not None:
            return self.grade.tests
        return self.trial.tests


def _lists_for(trial: TrialRow, known: dict[str, TaskLists]) -> TaskLists | None:
    if trial.task_id in known:
        return known[trial.task_id]
    tests = trial.tests or {}
    if all(g in tests for g in GROUPS):  # the trial recorded its own lists
        return TaskLists(trial.repo, list(tests["FAIL_TO_PASS"]), list(tests["PASS_TO_PASS"]))
    return None


def _first(files: dict[str, str], names: tuple[str, ...]) -> str | None:
    return next((files[n] for n in names if n in files), None)


def _parse(args: tuple[str, str | None, str, dict[str, str] | None]) -> ParsedLog:
    from trialbook.verify.grading import parse_log
    from trialbook.verify.markers import Seal

    log, repo, task_id, seal = args
    return parse_log(log, repo, task_id, seal=Seal.from_record(seal))


@contextmanager
def _mapper(jobs: int, n_logs: int) -> Iterator[Callable[..., Iterator[Any]]]:
    """`map` for parsing logs: worker processes when there are many logs and more than one job."""
    if jobs <= 1 or n_logs < PARALLEL_MIN:
        yield map
        return
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("fork")) as pool:
        yield partial(pool.map, chunksize=8)


def bare_trial() -> Any:
    """SQL: a trial with no per-test statuses, no extra and no log artifact. Its evidence holds nothing
    but the trial's columns, so `audit` counts such trials by group in SQL instead of one by one."""
    a, t = schema.artifacts.c, schema.trials.c
    logged = select(a.trial_id).where(a.name.in_((*LOG_ARTIFACTS, *SIDE_ARTIFACTS)))
    return and_(t.tests.is_(None), t.extra.is_(None), t.id.not_in(logged))


def evidence(
    ledger: Ledger, run_id: int, jobs: int = 1, skip_bare: bool = False, where: Any = None
) -> Iterator[Evidence]:
    """Every current trial of a run with its logs and trialbook's grade of them (`skip_bare`: only those
    that are not `bare_trial`; `where`: a further SQL condition on the trials, e.g. ids above the last seen).

    Parsing is the cost (official logs run to megabytes); `jobs` > 1 spreads it over processes.
    """
    conditions = [c for c in (not_(bare_trial()) if skip_bare else None, where) if c is not None]
    trials = list(ledger.trial_rows(run_id, where=and_(*conditions) if conditions else None))
    known = queries.task_lists(ledger, {t.task_id for t in trials})
    with _mapper(jobs, queries.count_artifacts(ledger, run_id, LOG_ARTIFACTS)) as mapper:
        for start in range(0, len(trials), CHUNK):  # logs are large: fetch a chunk of trials at a time
            chunk = trials[start : start + CHUNK]
            logs = queries.artifacts_of(ledger, [t.id for t in chunk], (*LOG_ARTIFACTS, *SIDE_ARTIFACTS))
            rows = []
            for trial in chunk:
                files = logs.get(trial.id, {})
                lists = _lists_for(trial, known)
                log = _first(files, LOG_ARTIFACTS)
                repo = (lists.repo if lists else None) or trial.repo
                rows.append((trial, lists, log, _first(files, SIDE_ARTIFACTS), repo))
            todo = [(log, repo, t.task_id, _seal(t)) for t, lists, log, _, repo in rows if log is not None and lists]
            if todo:  # only grading a log needs the swebench extra
                from trialbook.verify.grading import forged_markers, grade_parsed
                from trialbook.verify.markers import Seal
            parsed = iter(mapper(_parse, todo))
            for trial, lists, log, side, repo in rows:
                grade, status_map = None, {}
                if log is not None and lists is not None:
                    status_map, marker, conflicts = next(parsed)
                    notes = read_extra(trial)
                    canary = notes.canary or {"name": None, "seen": None}  # verify/canary.py
                    grade = grade_parsed(
                        status_map, marker, TaskLists(repo, lists.fail_to_pass, lists.pass_to_pass), conflicts,
                        canary["name"], canary["seen"] == canaries.HIDDEN,
                        forged_markers(log, Seal.from_record(_seal(trial))),
                    )  # fmt: skip
                    if notes.channels:  # decided by the junit report, not kept in the log
                        grade = grade.model_copy(update={"strict": False})  # verify/channels.py
                yield Evidence(trial, lists, log, side, grade, status_map)


def _seal(trial: Any) -> dict[str, str] | None:
    """The segment markers' nonces its verifier run sealed them with (verify/markers.py), None for an older trial."""
    return read_extra(trial).seal


def _fails(status: str | None) -> bool:
    return status is None or status in NOT_PASSING


@dataclass(frozen=True)
class TestDifference(Result):
    group: str  # FAIL_TO_PASS or PASS_TO_PASS
    test: str
    recorded: str | None
    regraded: str


@dataclass(frozen=True)
class Disagreement(Result):
    task_id: str
    attempt: int
    recorded: str
    regraded: str
    tests: list[TestDifference]


@dataclass(frozen=True, kw_only=True)
class RegradeResult(Result):
    run: str
    trials: int
    regraded: int
    agree: int
    agree_pct: float | None
    no_log: int
    no_test_lists: int
    ungraded_with_log: int
    agree_but_tests_differ: int
    disagreements: list[Disagreement]


def differing_tests(recorded: dict[str, dict[str, str]] | None, grade: GradeResult) -> list[TestDifference]:
    """Tests whose pass/fail verdict differs between the recorded statuses and the re-grade.

    Without recorded per-test statuses, the tests the re-grade fails are the ones that matter.
    """
    out = []
    for group in GROUPS:
        for test, status in grade.tests.get(group, {}).items():
            if recorded is None:
                if status in NOT_PASSING:
                    out.append(TestDifference(group, test, None, status))
                continue
            before = (recorded.get(group) or {}).get(test)
            if before != "skipped" and status != "skipped" and _fails(before) != _fails(status):
                out.append(TestDifference(group, test, before, status))
    return out


def regrade_run(ledger: Ledger, run_name: str, jobs: int = DEFAULT_JOBS) -> RegradeResult:
    """Re-grade every graded trial that has a verifier log; list where trialbook disagrees."""
    run = ledger.get_run(run_name)
    n = regraded = agree = no_log = no_lists = ungraded = tests_differ = 0
    disagreements: list[Disagreement] = []
    for ev in evidence(ledger, run.id, jobs):
        n += 1
        if ev.log is None:
            no_log += 1
            continue
        if ev.grade is None:
            no_lists += 1
            continue
        if not is_graded(ev.trial.outcome):
            ungraded += 1  # no recorded grade to agree with
            continue
        regraded += 1
        tests = differing_tests(ev.trial.tests, ev.grade)
        # a trial trialbook graded records swebench's verdict beside its reward, the strict one (verify/grading.py)
        strict = read_extra(ev.trial).official_reward is not None
        regraded_resolved = ev.grade.strict if strict else ev.grade.resolved
        if regraded_resolved == ev.recorded_resolved:
            agree += 1
            tests_differ += bool(ev.trial.tests and tests)
            continue
        disagreements.append(Disagreement(
            task_id=ev.trial.task_id, attempt=ev.trial.attempt,
            recorded="resolved" if ev.recorded_resolved else ev.trial.outcome,
            regraded="resolved" if regraded_resolved else "unresolved", tests=tests,
        ))  # fmt: skip
    return RegradeResult(
        run=run_name, trials=n, regraded=regraded, agree=agree,
        agree_pct=round(100.0 * agree / regraded, 2) if regraded else None, no_log=no_log, no_test_lists=no_lists,
        ungraded_with_log=ungraded, agree_but_tests_differ=tests_differ, disagreements=disagreements,
    )  # fmt: skip

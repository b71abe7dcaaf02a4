"""Grade a verifier's test log against F2P/P2P lists with the official `swebench` parsers and rules.

swebench is the `swebench` extra (its own requirements are heavy): importing this module without it
raises the one-line MissingExtraError, so the callers that grade logs import it only when they do.

The per-repo log parser (`MAP_REPO_TO_PARSER`) and the resolution rule (`get_eval_tests_report` +
`get_resolution_status`) are swebench's own, so a trialbook grade means what the official harness's
grade means: a test counts as passed when the parser saw PASSED/XFAIL for it and as failed when it
saw FAILED/ERROR *or did not see it at all*; SKIPPED counts neither way. One rule is stricter than
theirs: a test the log reports both passing and failing is graded by its failing report (`parse_log`).

That official verdict is kept for leaderboard parity (`GradeResult.resolved`); the reward is the strict one
(`GradeResult.strict`, `strict_verdict`): every listed test must have the status it has with the reference
solution, PASSED for every SWE-bench FAIL_TO_PASS / PASS_TO_PASS test (the gold run's status). XFAIL (which the
code under test can produce by calling `pytest.xfail()` on the branch it gets wrong), XPASS, SKIPPED and a test the
log does not report never count, nor do empty lists (nothing to pass is not a pass); neither does a log in which
the harness's segment markers occur more than once (the code under test printed them: `markers_forged`).

Two log layouts exist in the wild: swebench >= 3 wraps the test output in `>>>>> Start/End Test
Output` markers (parse between them, falling back to the whole log as swebench 4 does); older
harness logs (e.g. the June-2024 leaderboard logs) have no markers and are parsed whole.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import IO, Any, NamedTuple

from pydantic import BaseModel

from trialbook.extras import require
from trialbook.ledger.rows import TaskLists
from trialbook.outcomes import NOT_PASSING, p2p_regression
from trialbook.verify import canary as canaries
from trialbook.verify import linear
from trialbook.verify import markers as seals
from trialbook.verify.markers import Seal

require("swebench", "grading test logs with swebench's parsers")

from swebench.harness.constants import (  # noqa: E402
    APPLY_PATCH_FAIL,
    END_TEST_OUTPUT,
    FAIL_ONLY_REPOS,
    FAIL_TO_PASS,
    PASS_TO_PASS,
    RESET_FAILED,
    START_TEST_OUTPUT,
    TESTS_ERROR,
    TESTS_TIMEOUT,
    EvalType,
    ResolvedStatus,
    TestStatus,
)
from swebench.harness.grading import get_eval_tests_report, get_resolution_status  # noqa: E402
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER  # noqa: E402
from swebench.harness.log_parsers.python import (  # noqa: E402
    parse_log_matplotlib,
    parse_log_pytest,
    parse_log_pytest_options,
    parse_log_pytest_v2,
)

linear.bind_swebench()  # the parsers read the code under test's output: on RE2, linear in it (verify/linear.py)

# swebench's harness markers that mean "no valid test run": the official grader then sees no tests.
BAD_MARKERS: dict[str, str] = {
    APPLY_PATCH_FAIL: "patch_apply_failed",
    RESET_FAILED: "reset_failed",
    TESTS_ERROR: "tests_errored",
    TESTS_TIMEOUT: "tests_timed_out",
}

# Parser status -> trialbook per-test status (records.TestStatus; "skipped" counts neither way).
STATUS: dict[str, str] = {"PASSED": "pass", "XFAIL": "pass", "FAILED": "fail", "ERROR": "error", "SKIPPED": "skipped"}

PASSING = frozenset(("PASSED", "XFAIL"))
GOLD = "PASSED"  # the status of every FAIL_TO_PASS / PASS_TO_PASS test with the reference solution (strict_verdict)
MISSING = "missing"  # strict_verdict's reading of a listed test the log does not report
EMPTY = "<no listed tests>"  # strict_verdict's key when both lists are empty
FAILING = frozenset(("FAILED", "ERROR"))

# Repos swebench does not know (e.g. local example tasks) are read as pytest -rA output.
DEFAULT_PARSER = parse_log_pytest_v2

# Official logs run to megabytes (conda traces, django's verbose listing) and the parsers look at
# every line. For the parsers that judge each line on its own, only lines that can carry a status
# are handed over: the same lines, in the same order, so the status map is exactly the same
# (the grading tests check this on every real log, with `fast=False`).
_STATUSES = tuple(s.value for s in TestStatus)
_V2_COLOUR = linear.compile(r"\[(\d+)m")  # what parse_log_pytest_v2 strips from each line, then
_V2_CONTROL = str.maketrans("", "", "".join(chr(c) for c in range(1, 32) if c != 10))  # controls


def _lines_starting_with_status(log: str) -> str:
    return "\n".join(line for line in log.split("\n") if line.startswith(_STATUSES))


def _lines_v2_reads(log: str) -> str:
    cleaned = _V2_COLOUR.sub("", log).translate(_V2_CONTROL).split("\n")
    lines = log.split("\n")
    return "\n".join(o for o, c in zip(lines, cleaned, strict=True) if c.startswith(_STATUSES) or c.endswith(_STATUSES))


PREFILTERS: dict[Callable[..., dict[str, str]], Callable[[str], str]] = {
    parse_log_pytest: _lines_starting_with_status,
    parse_log_pytest_options: _lines_starting_with_status,
    parse_log_matplotlib: _lines_starting_with_status,
    parse_log_pytest_v2: _lines_v2_reads,
}


class GradeResult(BaseModel):
    resolved: bool
    tests: dict[str, dict[str, str]]  # {"FAIL_TO_PASS": {test: status}, "PASS_TO_PASS": {...}}
    p2p_regression: bool  # outcomes.p2p_regression: every F2P test passes, some P2P test does not
    parsed: int  # per-test result lines the parser saw
    marker: str | None = None  # a BAD_MARKERS name when the harness reported no valid test run
    conflicts: list[str] = []  # graded tests (and the canary) the log reports both passing and failing
    canary: str | None = None  # what the log says of the verifier's canary (verify/canary.py); None: none planted
    # the strict verdict (the reward): every listed test with its gold status (strict_verdict); `not_gold`: the
    # listed tests that lack it, with what the log says (XFAIL, SKIPPED, FAILED, missing, ...)
    strict: bool = False
    not_gold: dict[str, str] = {}
    markers_forged: bool = False  # a segment marker the code under test printed (`forged_markers`)
    statuses: dict[str, str] = {}  # the parser's status of each graded test it saw (verify/channels.disagreement)

    def failing(self, group: str) -> list[str]:
        return [t for t, s in self.tests.get(group, {}).items() if s in NOT_PASSING]


class ParsedLog(NamedTuple):
    status_map: dict[str, str]  # test -> PASSED|FAILED|... (a test reported both ways: its failing status)
    marker: str | None  # a BAD_MARKERS name when the harness reported no valid test run
    conflicts: list[str]  # tests reported both passing and failing


def parse_log(
    log_text: str, repo: str | None, task_id: str = "", fast: bool = True, seal: Seal | None = None
) -> ParsedLog:
    """The parser's {test: PASSED|FAILED|...} map for a log, the bad marker found (if any), and the tests
    the log reports both passing and failing.

    swebench's parsers keep a test's last report. The change under test runs inside the test process, so
    it can print `PASSED <test>` after pytest's own `FAILED <test>` (from an atexit hook, say), and the
    last report would grade it. For the parsers that judge each line on its own (the pytest family,
    `PREFILTERS`) every report is read: a test reported both passing and failing is graded by its failing
    report and named in `conflicts` (no official Verified log in the shared data has one; pytest's own suite
    prints the reports of the runs it makes of itself, where one inner test may fail in one run and xfail in
    another: grade_parsed keeps only the conflicts of the tests it grades). `fast=False`
    hands the parser the whole log (the prefilter's equivalence is tested that way).
    """
    for text, name in BAD_MARKERS.items():
        if text in log_text:
            return ParsedLog({}, name, [])
    official = MAP_REPO_TO_PARSER.get(repo or "", DEFAULT_PARSER)
    prefilter = PREFILTERS.get(official)
    # Parsers take a TestSpec; the Python ones ignore it, two non-Python ones read instance_id.
    spec: Any = SimpleNamespace(instance_id=task_id, repo=repo)

    def parsed(text: str) -> tuple[dict[str, str], str | None]:
        """The status map of `text`, and its status lines (None for a parser without a prefilter): one
        prefilter pass serves both the map and the conflicts."""
        lines = prefilter(text) if prefilter else None
        return official(lines if lines is not None and fast else text, spec), lines

    sealed = seals.segment(log_text, seal)[0] if seal is not None else None
    if sealed is not None:
        status_map, lines = parsed(sealed)
    elif seal is None and START_TEST_OUTPUT in log_text and END_TEST_OUTPUT in log_text:
        status_map, lines = parsed(log_text.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0])
        if not status_map:
            status_map, lines = parsed(log_text)
    else:
        status_map, lines = parsed(log_text)
    failing = _reported_both_ways(lines, official, spec) if lines is not None else {}
    status_map.update(failing)
    return ParsedLog(status_map, None, sorted(failing))


def _reported_both_ways(lines: str, official: Callable[..., dict[str, str]], spec: Any) -> dict[str, str]:
    """Tests that one line reports passing and another failing: test -> its (first) failing status."""
    passing, failing = set[str](), dict[str, str]()
    for line in lines.split("\n"):
        for test, status in official(line, spec).items():
            if status in PASSING:
                passing.add(test)
            elif status in FAILING:
                failing.setdefault(test, status)
    return {t: s for t, s in failing.items() if t in passing}


def status_lines(stream: IO[bytes], repo: str | None, keep: tuple[str, ...] = ()) -> str:
    """The lines of a log (a binary stream, read once) that `parse_log` can use, for a log too big to hold:
    `parse_log` of the result equals `parse_log` of the whole log. For the parsers that judge each line on
    its own that is the lines `PREFILTERS` keeps, the harness's markers and lines holding `keep`; for the
    others it is every line (the whole log is then held, as the official harness holds it)."""
    prefilter = PREFILTERS.get(MAP_REPO_TO_PARSER.get(repo or "", DEFAULT_PARSER))
    always = (*BAD_MARKERS, START_TEST_OUTPUT, END_TEST_OUTPUT, *keep)
    out = []
    for raw in stream:
        line = raw.decode("utf-8", "replace").removesuffix("\n")
        if prefilter is None or prefilter(line) or any(m in line for m in always):
            out.append(line)
    return "\n".join(out)


def parse_status_map(
    log_text: str, repo: str | None, task_id: str = "", fast: bool = True
) -> tuple[dict[str, str], str | None]:
    """`parse_log` without the conflicts: the status map and the bad marker."""
    parsed = parse_log(log_text, repo, task_id, fast)
    return parsed.status_map, parsed.marker


def _status(test: str, status_map: dict[str, str], fail_only: bool) -> str:
    if test not in status_map:
        return "pass" if fail_only else "missing"
    return STATUS.get(status_map[test], "fail")


def grade_status_map(
    status_map: dict[str, str], repo: str | None, fail_to_pass: list[str], pass_to_pass: list[str]
) -> tuple[bool, dict[str, dict[str, str]]]:
    """swebench's resolution decision for a parsed status map, plus per-test statuses."""
    fail_only = (repo or "") in FAIL_ONLY_REPOS
    eval_type = EvalType.FAIL_ONLY if fail_only else EvalType.PASS_AND_FAIL
    report = get_eval_tests_report(
        status_map, {FAIL_TO_PASS: fail_to_pass, PASS_TO_PASS: pass_to_pass}, eval_type=eval_type
    )
    resolved = get_resolution_status(report) == ResolvedStatus.FULL.value
    tests = {
        FAIL_TO_PASS: {t: _status(t, status_map, fail_only) for t in fail_to_pass},
        PASS_TO_PASS: {t: _status(t, status_map, fail_only) for t in pass_to_pass},
    }
    return resolved, tests


def strict_verdict(
    status_map: dict[str, str],
    repo: str | None,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    gold: dict[str, str] | None = None,
) -> tuple[bool, dict[str, str]]:
    """Resolved only when every listed test has its gold status (`gold`, test -> status; GOLD for a test it does
    not name): the listed tests that do not, with the log's status for them (MISSING when it has none; EMPTY when
    no test is listed). In swebench's fail-only repositories the parser reports failures only, so a test it does
    not report is read as the official rule reads it, passing."""
    listed = list(dict.fromkeys([*fail_to_pass, *pass_to_pass]))
    if not listed:
        return False, {EMPTY: MISSING}
    fail_only = (repo or "") in FAIL_ONLY_REPOS
    off = {}
    for test in listed:
        status = status_map.get(test, GOLD if fail_only else MISSING)
        if status != (gold or {}).get(test, GOLD):
            off[test] = status
    return not off, off


def forged_markers(log_text: str, seal: Seal | None = None) -> bool:
    """With the run's `seal`: whether a marker lacks its nonce (verify/markers.forged). Without (a log of
    another harness): whether the harness's segment markers occur more than once: test.sh prints each once,
    around the test command, so a second copy was printed by the code under test (to end the parsed segment
    before its real report, or to start one around forged lines). Nothing the code under test prints can remove
    the real ones."""
    if seal is not None:
        return seals.forged(log_text, seal)
    return log_text.count(START_TEST_OUTPUT) > 1 or log_text.count(END_TEST_OUTPUT) > 1


def grade_parsed(
    status_map: dict[str, str],
    marker: str | None,
    lists: TaskLists,
    conflicts: list[str] | None = None,
    canary: str | None = None,
    canary_expected: bool = False,
    markers_forged: bool = False,
    gold: dict[str, str] | None = None,
) -> GradeResult:
    """The grade of an already parsed log (see `parse_log`) against `lists` (the task's repository and test lists);
    `canary`: the name of the test that must fail (verify/canary.py), which, reported passing, fails the grade: the
    runner was made to pass what fails; with `canary_expected` (the runner reported it failing without the change:
    verify/blame.missing_canary), not reporting it fails the grade too ("hidden"). Of `conflicts`, only the tests
    graded here are kept: a test no list names cannot change the grade whichever way it is read. `resolved` is
    swebench's verdict (with trialbook's conflict rule), `strict` the reward's (`strict_verdict`; `markers_forged`
    fails it)."""
    repo, fail_to_pass, pass_to_pass = lists
    resolved, tests = grade_status_map(status_map, repo, fail_to_pass, pass_to_pass)
    strict, not_gold = strict_verdict(status_map, repo, fail_to_pass, pass_to_pass, gold)
    graded = {*fail_to_pass, *pass_to_pass}
    seen = canaries.reading(status_map, canary) if canary else None
    # a canary the log reports both passing and failing passed once: FAILED lines printed for every name a canary
    # could take must not outvote the runner's PASSED (issue 55, class 3)
    if canary and any(canaries.names(t, canary) for t in conflicts or []):
        seen = canaries.PASSED
    if canary_expected and seen in canaries.UNSEEN:
        seen = canaries.HIDDEN
    if marker is not None or seen in canaries.SUBVERTED:
        resolved = False  # the official harness reports an unapplied/errored run as unresolved
    strict = strict and resolved and not markers_forged
    return GradeResult(
        resolved=resolved,
        strict=strict,
        not_gold=not_gold,
        markers_forged=markers_forged,
        tests=tests,
        p2p_regression=p2p_regression(tests),
        parsed=len(status_map),
        marker=marker,
        conflicts=[t for t in conflicts or [] if t in graded or (canary and canaries.names(t, canary))],
        canary=seen,
        statuses={t: status_map[t] for t in graded if t in status_map},
    )


def grade_test_log(
    log_text: str,
    repo: str | None,
    fail_to_pass: list[str],
    pass_to_pass: list[str],
    task_id: str = "",
    canary: str | None = None,
    gold: dict[str, str] | None = None,
    seal: Seal | None = None,
) -> GradeResult:
    """Grade one verifier log: resolved iff every F2P and P2P test passes (official semantics) and the canary,
    if one was planted, was not reported passing; strict as `grade_parsed` says. `seal`: the run's markers'
    nonces (verify/markers.py), None for a log of another harness."""
    status_map, marker, conflicts = parse_log(log_text, repo, task_id, seal=seal)
    forged = forged_markers(log_text, seal)
    lists = TaskLists(repo, fail_to_pass, pass_to_pass)
    return grade_parsed(status_map, marker, lists, conflicts, canary, False, forged, gold)

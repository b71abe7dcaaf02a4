"""Cross-checked channels: a pytest run's exit status, its per-test text log and its structured report must agree.

Why: the code under test runs inside the test process and so owns every channel that process reports through. It
can print forged lines (`PASSED <id>` after the real report, `SKIPPED` lines at exit), end the process with a status
of its choice (`atexit` + `os._exit(0)`), or subvert the runner. Each channel alone can be forged; forging all three
consistently is much harder than forging one, and any inconsistency is evidence of a forgery, since pytest writes all
three from the same results.

How: every pytest command that runs unprivileged (verify/privilege.py) gets `--junitxml=<a fresh folder>/junit.xml`
through PYTEST_ADDOPTS (not when the command names a junit report or `-p no:junitxml` itself, nor for a runner other
than pytest). The report is written by pytest at session finish; after the command returned and every process of
the tests' uid was killed, root reads it (the first REPORT_LIMIT characters, by the shell's builtins) and prints it
between two lines carrying the separation's nonce, which nothing of the tests can print (privilege.read_markers
takes it out of the log). `disagreement` then compares, for the trial's graded tests:
- the exit status against the report: 0 while the report holds a failure or an error;
- the text log against the report: a test the text log reports passing (PASSED, XFAIL) that the report does not
  have, or has failing, erroring or skipped (an xfail is a skip of type `pytest.xfail` there);
- a report that should exist and does not (deleted, or the run ended before pytest wrote it) while the text log
  would resolve the task.
Any disagreement grades 0, tagged `channels_disagree` (its reason recorded). A report that cannot be read (past
REPORT_LIMIT, not XML, a DOCTYPE) counts as missing. Not checked: a run as root (`tests_not_separated`), a runner
other than pytest, a task graded by its reward file (its own test.sh decides), a test whose id holds a space (the
parsers rewrite those).
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from types import MappingProxyType

REPORT_LIMIT = 1_000_000  # characters of a junit report read (privilege._prologue); a longer one counts as missing
TAG = "channels_disagree"
PASSED, FAILED, SKIPPED, XFAIL = "passed", "failed", "skipped", "xfail"
TEXT_PASSING = ("PASSED", "XFAIL")


def junit_key(test_id: str) -> str:
    """A pytest node id as its junit testcase reads (`classname::name`), pytest's own mangling
    (`tests/test_a.py::TestX::test_b[1]` -> `tests.test_a.TestX::test_b[1]`). A parameter id is kept whole: it
    may hold `::` or `/` itself (requests' `test_errors[http://fe80::5054:ff:fe5a:fc0-InvalidURL]`)."""
    path, bracket, param = test_id.partition("[")
    names = [n for n in path.split("::") if n != "()"]
    if not names:
        return test_id
    names[0] = names[0].replace("/", ".").removesuffix(".py")
    names[-1] += bracket + param
    if len(names) == 1:
        return names[0]
    return ".".join(names[:-1]) + "::" + names[-1]


def parse_junit(xml: str) -> Mapping[str, str] | None:
    """`classname::name` -> passed, failed (a failure or an error), skipped or xfail, for each testcase of a junit
    report; None when it is not a readable report (cut at REPORT_LIMIT, not XML, or declaring a DOCTYPE, which
    entity expansion could abuse). Read-only and kept for the last few reports: a verifier run's reports are read by
    `disagreement` and by the canaries' readers (`canary_in_reports`, verify/runner.witness_reading), parsed once."""
    return _parsed(xml)


@functools.lru_cache(maxsize=16)
def _parsed(xml: str) -> Mapping[str, str] | None:
    text = xml.strip()
    if not text or len(xml) >= REPORT_LIMIT or "<!DOCTYPE" in text or "<!ENTITY" in text:
        return None
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return None
    out: dict[str, str] = {}
    for case in root.iter("testcase"):
        key = f"{case.get('classname', '')}::{case.get('name', '')}"
        kinds = {child.tag: child for child in case}
        if "failure" in kinds or "error" in kinds:
            status = FAILED
        elif "skipped" in kinds:
            status = XFAIL if kinds["skipped"].get("type", "") == "pytest.xfail" else SKIPPED
        else:
            status = PASSED
        if out.get(key) != FAILED:  # a teardown error is a second testcase of the same name: failing wins
            out[key] = status
    return MappingProxyType(out)


def disagreement(
    reports: list[str | None],
    exits: list[int],
    status_map: dict[str, str],
    graded: Iterable[str],
    resolves: bool,
    test_sh: str | None = None,
) -> str | None:
    """Why the channels of a run disagree, or None. `reports`: each pytest command's report text as root read it
    (None: asked for and absent); `exits`: those commands' exit statuses; `status_map`: the text log's parsed
    statuses; `graded`: the tests the grade reads; `resolves`: whether the text log would resolve the task;
    `test_sh`: the task's own test.sh: a listed test whose file it never names and of whose module the junit report
    has no testcase is not one the run's pytest collected (pytest-7521's PASS_TO_PASS holds
    `test_capsysbinary.py::test_hello`, a test that a test of testing/test_capture.py writes and runs in a pytester
    folder: its PASSED line is that inner run's), so it is read from the text log alone. The agent changes neither
    test.sh nor the lists; a test.sh that names no test file leaves the junit side to decide (docs/threat-model.md)."""
    if not reports:
        return None
    merged: dict[str, str] = {}
    for i, text in enumerate(reports):
        parsed = parse_junit(text) if text is not None else None
        if parsed is None:
            if resolves:
                return "the junit report of a pytest run is missing or unreadable"
            continue
        failing = FAILED in parsed.values()
        if i < len(exits) and exits[i] == 0 and failing:
            return "a pytest run exited 0 while its junit report holds a failure"
        # every channel accounts for every test (issue 55, class 3): an empty report, or a failing exit status
        # beside a report without a failure, is a disagreement, never "no information"
        if resolves and not parsed:
            return "the junit report of a pytest run holds no test"
        if resolves and i < len(exits) and exits[i] != 0 and not failing:
            return f"a pytest run exited {exits[i]} while its junit report holds no failure"
        merged.update(parsed)
    if not merged:
        return None
    for test in graded:
        text_status = status_map.get(test)
        # not a pytest node id, so no junit testcase can name it: the official P2P lists of pytest 5262 and 7521
        # hold `[100%]`, which swebench's parser read off a progress line
        if text_status not in TEXT_PASSING or " " in test or "::" not in test:
            continue
        if test_sh is not None and test.split("::", 1)[0] not in test_sh and not _module_in(merged, test):
            continue
        got = merged.get(junit_key(test)) or _renamed(merged, junit_key(test))
        want = (PASSED,) if text_status == "PASSED" else (XFAIL, SKIPPED)
        if got not in want:
            return f"the text log reports {test} {text_status}, the junit report {got or 'does not have it'}"
    return None


def _module_in(merged: dict[str, str], test: str) -> bool:
    """Whether the junit report has a testcase of `test`'s module (a collection error's too: classname "", the
    module's dotted path as its name)."""
    module = junit_key(test.split("::", 1)[0])
    return any(k.startswith((module + ".", module + "::")) or k == "::" + module for k in merged)


def _renamed(merged: dict[str, str], key: str) -> str | None:
    """The junit status of a parametrized test whose id a log parser shortened: swebench's requests parser keeps
    `[/test_utils.py]` of pytest's `[/testbed/tests/test_utils.py]`, and `[<meta` of `[<meta charset="UTF-8">]` (cut
    at a space; `[` alone when the id starts with one). The same test function whose parameter id holds the
    shortened one; several such: failing if any fails (a shortened name never hides a failure). None when there is
    none."""
    base, bracket, param = key.partition("[")
    fragment = param.removesuffix("]")  # "" when cut right after "[" (pytest-7324's `[    true           ]`)
    if not bracket:
        return None
    found = [v for k, v in merged.items() if k.startswith(base + "[") and fragment in k[len(base) + 1 : -1]]
    if not found:
        return None
    return FAILED if FAILED in found else found[0]


def canary_in_reports(reports: list[str | None], names: str) -> str | None:
    """What the junit reports say of the canaries `names` (comma-separated function names): "passed" when any
    testcase of one passed (or xfailed), "failed" when every one failed, "missing" when a readable report has none
    of them; None when no report was read. The runner writes this channel apart from the text log, so a text log
    forged to say "failed" does not hide a canary the runner passed."""
    wanted = [n for n in names.split(",") if n]
    seen: set[str] = set()
    read = False
    for text in reports:
        parsed = parse_junit(text) if text is not None else None
        if parsed is None:
            continue
        read = True
        for statuses in canary_cases(parsed, wanted).values():
            seen |= statuses
    if not read:
        return None
    if any(s in (PASSED, XFAIL) for s in seen):
        return "passed"
    return "failed" if seen and all(s == FAILED for s in seen) else "missing"


def test_function(test_id: str) -> str:
    """A pytest id's test function: `file.py::Class::test_x[case]` -> `test_x` (an id without `::` stays whole)."""
    return test_id.rsplit("::", 1)[-1].split("[", 1)[0]


def canary_cases(parsed: Mapping[str, str], names: Iterable[str]) -> dict[str, set[str]]:
    """Each canary's statuses in one parsed report, by its function name (a class and a parameter id dropped)."""
    out: dict[str, set[str]] = {n: set() for n in names}
    for key, status in parsed.items():
        case = test_function(key)
        if case in out:
            out[case].add(status)
    return out

"""A reward-file task's one run: the graded run holds the twins and is its own witness (docs/threat-model.md, G16).

Why: a reward-file task's verifier decides by itself what a failure is, so its graded run had held no test that must
fail; a witness run beside it held them (verify/witness.py), and the graded run held look-alikes that pass. The code
under test told the two runs apart by whatever differed between them (a look-alike's first statement, which returns:
tests/verify/attacks/grading/returns_skipping_lookalikes.sh), and patching each tell did not converge. One run leaves
nothing to tell apart: where test.sh turns a pytest run's exit status into its reward and reads nothing else of the
run (verify/runner.one_run), the graded run itself holds the planted tests (twins, else derived canaries), and root,
after the test command ended and every process of the tests' uid was killed, gives test.sh the status the run would
have had without them (privilege.SHOWN, from the run's junit report; the planted tests' names are in the staged
test.sh, root's alone). What the planted tests did is read from the same run's channels (`witness_reading`): each
reported failing, in the text log and in the junit report, or the runner was subverted
(verify/blame.unwitnessed_reward).

The report is the tests' uid's to write (pytest writes it), so it says what the code under test wants it to; but to
pass the real tests while the planted ones fail, that code must tell them apart, which the twins are built to
prevent (verify/twins.py). `shown_status` computes here what root computed there; a difference (a report that two
readers read differently) is a forgery: graded 0, `exit_status_disagrees`.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from trialbook.verify import linear
from trialbook.verify.canary import FAILED, MISSING, PASSED, SKIPPED
from trialbook.verify.channels import REPORT_LIMIT, canary_cases, parse_junit, test_function
from trialbook.verify.privilege import Reading


def shown_status(status: int, report: str | None, names: str) -> int:
    """The status privilege.SHOWN gave test.sh of a pytest run that exited `status` with the junit `report` root read
    (None: none), planted tests `names` (comma-separated): 0 when it exited 1 and the report holds at least one
    planted testcase, each with a failure or an error, and no other testcase with one; else `status`."""
    planted = {n for n in names.split(",") if n}
    if not planted or status != 1 or report is None or len(report) >= REPORT_LIMIT or "<!" in report:
        return status
    try:
        root = ET.fromstring(report.strip())
    except ET.ParseError:
        return status
    seen_planted = passed_planted = real_failed = False
    for case in root.iter("testcase"):
        name = case.get("name", "").split("[", 1)[0]
        failing = any(child.tag in ("failure", "error") for child in case.iter() if child is not case)
        if name in planted:
            seen_planted = True
            passed_planted = passed_planted or not failing
        elif failing:
            real_failed = True
    return 0 if seen_planted and not passed_planted and not real_failed else status


# a result line's status word (pytest's, unittest's) -> what it says of a canary
_RESULTS = dict.fromkeys(("PASSED", "XPASS", "XFAIL", "ok", "expected failure", "unexpected success"), PASSED)
_RESULTS |= {"FAILED": FAILED, "ERROR": FAILED, "FAIL": FAILED, "SKIPPED": SKIPPED}
_JUNIT = {"passed": PASSED, "xfail": PASSED, "failed": FAILED, "skipped": SKIPPED}


def _result_line(line: str) -> tuple[str, str] | None:
    """(status, test name) of one whole result line, or None: pytest's -rA summary `STATUS <id>` (then nothing, or
    ` - ` and its message), -v's `<id> STATUS [ n%]`, unittest's `name (id) ... ok` and `FAIL: name (id)`. Read by
    splitting, in linear time; a line with anything else in it (a suffix a change printed) is no result line."""
    words = line.rstrip("\r").split(" ")
    if len(words) >= 2 and words[0] in _RESULTS and "::" in words[1] and (len(words) == 2 or words[2] == "-"):
        status, test = words[0], words[1]
    elif len(words) >= 2 and "::" in words[0] and words[1] in _RESULTS:
        rest = "".join(words[2:])
        if rest and not (rest[0] == "[" and rest.endswith("%]") and rest[1:-2].isdigit()):
            return None
        status, test = words[1], words[0]
    elif " ... " in line and (head := line.split(" ... ", 1))[1].rstrip("\r") in _RESULTS:
        status, test = head[1].rstrip("\r"), head[0].split(" (", 1)[0]
    elif words[0] in ("FAIL:", "ERROR:") and len(words) == 3 and words[2].startswith("("):
        status, test = words[0][:-1], words[1]
    else:
        return None
    name = test_function(test)
    return (_RESULTS[status], name) if status in _RESULTS else None


def witness_reading(log: str, ran: Reading, name: str) -> str:
    """What a witness run says of its canaries (`name`: comma-separated), from every channel the run has, none
    trusted alone (docs/threat-model.md, G16): the text log's whole result lines (`_result_line`: a suffix printed on
    a summary line makes it none, never a failure) and each pytest run's junit report with the run's exit status.
    "passed" when any channel reports a canary passing, or a run whose report holds a failing canary exited 0 (the
    runner was made to pass what fails); "failed" only when every canary is reported failing in the text log and in
    the reports; else "skipped" (one was skipped) or "missing": unread, not reported, or a report asked for that is
    absent, empty or unreadable. Missing while the canaries fail on the image as built is `runner_subverted`
    (verify/blame.unwitnessed_reward), never a failure."""
    names = [n for n in name.split(",") if n]
    seen: dict[str, set[str]] = {n: set() for n in names}
    for line in linear.strip_ansi(log).split("\n"):
        got = _result_line(line)
        if got is not None and got[1] in seen:
            seen[got[1]].add(got[0])
    reported: dict[str, set[str]] = {n: set() for n in names}
    for i, report in enumerate(ran.reports):
        parsed = parse_junit(report) if report is not None else None
        if not parsed:
            return MISSING  # a channel missing or empty is a disagreement, never "no information"
        exited_0 = i < len(ran.report_exits) and ran.report_exits[i] == 0
        for case, statuses in canary_cases(parsed, names).items():
            if "failed" in statuses and exited_0:
                return PASSED  # the runner's own exit status says the failing canary passed
            reported[case] |= {_JUNIT.get(status, MISSING) for status in statuses}
    channels = [seen, reported] if ran.reports else [seen]
    readings = [st for channel in channels for st in channel.values()]
    if any(PASSED in st for st in readings):
        return PASSED
    if names and all(st == {FAILED} for st in readings):
        return FAILED
    return SKIPPED if any(SKIPPED in st for st in readings) else MISSING

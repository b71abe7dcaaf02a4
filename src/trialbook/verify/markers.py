"""Segment markers sealed with this trial's nonces: the graded segment is the one the harness's test.sh printed.

Why: swebench's test scripts print `>>>>> Start Test Output` and `>>>>> End Test Output` around the test command and
the parser reads only what lies between them. The code under test runs inside that command and can print the same
text: an early end marker followed by forged `PASSED` lines, or a whole forged segment at exit. Counting the markers
catches a copy of them; a seal makes the real ones unforgeable.

How (`seal`): in the staged test.sh (root's, mode 0600: verify/privilege.staging) every marker outside a heredoc gets a
nonce appended, a different one for the start and the end marker (`Seal`), both fresh for every verifier run. The
start nonce is printed before the test command runs and may be read back by it (a log file test.sh writes with
`tee`); the end nonce is printed only after the test command returned and every process of the tests' uid was killed
(verify/privilege.py), so nothing of the code under test can know it while it runs.

Reading (`segment`): the graded text runs from the first sealed start marker (nothing of the tests runs before it is
printed) to the first sealed end marker after it (which nothing of the tests can print). A marker without this
run's nonce anywhere in the log (a plain `>>>>> End Test Output`, or one with a guessed or replayed nonce) is a
forgery: it is not read as a marker, and the trial is graded 0, tagged `markers_forged`
(verify/grading.grade_parsed). A script without markers is not sealed and its log is read whole.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass

from trialbook import tokens
from trialbook.tasks.testscript import HEREDOC

START = ">>>>> Start Test Output"  # swebench.harness.constants.START_TEST_OUTPUT (no swebench import here)
END = ">>>>> End Test Output"  # swebench.harness.constants.END_TEST_OUTPUT
_NONCE = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True)
class Seal:
    start: str  # the start marker's nonce
    end: str  # the end marker's nonce (never in the log before the test command returned)

    @classmethod
    def fresh(cls) -> Seal:
        return cls(tokens.token_hex(8), secrets.token_hex(8))

    @classmethod
    def from_record(cls, record: object) -> Seal | None:
        """The seal kept in a trial's record (`as_record`), or None."""
        if not isinstance(record, dict):
            return None
        start, end = record.get("start"), record.get("end")
        if isinstance(start, str) and isinstance(end, str) and _NONCE.fullmatch(start) and _NONCE.fullmatch(end):
            return cls(start, end)
        return None

    def as_record(self) -> dict[str, str]:
        return {"start": self.start, "end": self.end}

    @property
    def start_marker(self) -> str:
        return f"{START} {self.start}"

    @property
    def end_marker(self) -> str:
        return f"{END} {self.end}"


def seal(script: str, seal: Seal) -> tuple[str, bool]:
    """`script` with each segment marker outside a heredoc sealed with its nonce, and whether it held both markers
    (False: unchanged, its log is read whole)."""
    lines = script.split("\n")
    end: str | None = None
    found = {START: False, END: False}
    for i, line in enumerate(lines):
        if end is not None:  # a heredoc's body (swebench's test patch) is data, not the script's markers
            end = None if line.strip() == end else end
            continue
        for marker, nonce in ((START, seal.start), (END, seal.end)):
            if marker in line:
                found[marker] = True
                line = line.replace(marker, f"{marker} {nonce}")
        lines[i] = line
        if doc := HEREDOC.search(line):
            end = doc.group(1)
    if not all(found.values()):
        return script, False
    return "\n".join(lines), True


def segment(log: str, seal: Seal) -> tuple[str | None, bool]:
    """The text between this run's sealed markers (None when the log has no sealed start marker: the script was not
    sealed, or it never ran its test command), and whether the log holds a marker without this run's nonce."""
    first = log.find(seal.start_marker)
    text = None
    if first >= 0:
        after = first + len(seal.start_marker)
        stop = log.find(seal.end_marker, after)
        text = log[after:] if stop < 0 else log[after:stop]
        text = text.partition("\n")[2] if "\n" in text else ""  # the rest of the marker's own line is not output
    return text, forged(log, seal)


def forged(log: str, seal: Seal) -> bool:
    """Whether a segment marker in `log` lacks this run's nonce (the code under test printed it)."""
    for marker, nonce in ((START, seal.start), (END, seal.end)):
        at = log.find(marker)
        while at >= 0:
            at += len(marker)
            if log[at : at + 1 + len(nonce)] != f" {nonce}":
                return True
            at = log.find(marker, at)
    return False

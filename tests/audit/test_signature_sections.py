"""Where in a pytest log a signature's pattern counts (audit/signatures.matches): not in the PASSES section, where
pytest -rA prints what the tests that passed captured. On pytest-5809 (built from the shared sources, validated
here) its pastebin test catches a failed name lookup and passes, and the audit counted the nop trial, unresolved for
want of the fix, as "showing a known artifact" (network_failure)."""

from __future__ import annotations

from trialbook.audit.regrade import Evidence
from trialbook.audit.signatures import matches
from trialbook.ledger.rows import TrialRow

LOOKUP = "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"
PASSES = (
    "================================== PASSES ==================================\n"
    "__________________ TestPasteCapture.test_non_ascii_paste_text __________________\n"
    "----------------------------- Captured stderr call -----------------------------\n"
    f"{LOOKUP}\n"
)
FAILURES = (
    "================================= FAILURES =================================\n"
    "_______________________ TestPaste.test_create_new_paste _______________________\n"
    "E       assert 'python3' == 'text'\n"
)
SUMMARY = (
    "=========================== short test summary info ============================\n"
    "PASSED testing/test_pastebin.py::TestPasteCapture::test_non_ascii_paste_text\n"
    "FAILED testing/test_pastebin.py::TestPaste::test_create_new_paste - AssertionError\n"
    "==================== 1 failed, 1 passed in 0.40 seconds ====================\n"
)


def _evidence(log: str) -> Evidence:
    row = TrialRow(id=1, run_id=1, task_id="pytest-dev__pytest-5809", attempt=1, repo="pytest-dev/pytest",
                   outcome="unresolved", reward=0.0, step=None, wv=None, epoch=None, exception=None,
                   exception_message=None, duration_s=None, tokens=None, turns=None, tests=None, started_at=None,
                   finished_at=None, extra={}, superseded_by=None)  # fmt: skip
    return Evidence(trial=row, lists=None, log=log, side_log=None, grade=None, status_map={})


def test_a_pattern_only_in_what_a_passing_test_captured_is_no_signature() -> None:
    assert "network_failure" not in matches(_evidence(FAILURES + PASSES + SUMMARY))


def test_the_same_pattern_in_a_failing_test_or_outside_pytest_sections_is() -> None:
    failing = FAILURES + "----------------------------- Captured stderr call -----------------------------\n"
    assert "network_failure" in matches(_evidence(failing + LOOKUP + "\n" + PASSES + SUMMARY))
    assert "network_failure" in matches(_evidence(f"pip install -e .\n{LOOKUP}\n" + FAILURES + SUMMARY))
    # no summary after it: the section runs to the end of the log, which is then not searched past its header
    assert "network_failure" in matches(_evidence(f"{LOOKUP}\n" + PASSES))

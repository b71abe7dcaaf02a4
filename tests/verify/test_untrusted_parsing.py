"""The harness's own parsing of what the code under test or the agent wrote runs in time linear in it (verify/linear.py,
docs/threat-model.md "The harness's own parsing"): every pattern is RE2's, swebench's Python parsers run on RE2 and
grade every real log as they do on Python's engine, and a crafted 200 KB input shaped for each parser's old
backtracking (seconds to minutes each before) is read in well under a second."""

from __future__ import annotations

import json
import multiprocessing
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from trialbook.audit import signatures
from trialbook.rl import rollout
from trialbook.verify import canary, grading, hacks, linear, privilege, runner

SWE = Path(__file__).resolve().parents[3] / "shared" / "data" / "swebench-verified"
LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
N = 200_000


def _parsers() -> object:
    from swebench.harness.log_parsers import python

    return python


def test_every_pattern_over_untrusted_text_is_linear():
    patterns = [
        signatures.ANSI, signatures.PASSED_SUMMARY, signatures.COLLECTION, signatures.SETUP_ERROR,
        signatures.PASSES_HEADER, signatures.SUMMARY_HEADER, *(p for ps in signatures._COMPILED.values() for p in ps),
        privilege.RUNNER_FAILED, runner._REPORTED_FAILING, runner._PER_TEST,
        *(h.pattern for h in hacks.HACKS), hacks.GIT_PATHS, hacks._FILE, hacks._DEF_EQ,
        grading._V2_COLOUR, rollout.ACTION,
    ]  # fmt: skip
    assert all(linear.is_linear(p) for p in patterns)
    assert _parsers().re is linear.AS_RE  # bound when verify/grading is imported
    assert not linear.is_linear(re.compile("a"))
    for needs_backtracking in (r"(a)\1", r"x(?=y)", r"(?<!x)y"):  # refused, not run
        with pytest.raises(Exception, match="invalid"):
            linear.compile(needs_backtracking)


def _cases() -> dict[str, Callable[[], object]]:
    from swebench.harness.log_parsers import python as sp

    def sig(name: str, text: str) -> Callable[[], object]:
        return lambda: [p.search(text) for p in signatures._COMPILED[name]]

    patch = b"diff --git a/m.py b/m.py\n+"
    return {
        "runner_failed": lambda: privilege.RUNNER_FAILED.search("= " + "1 failed in 1s " * (N // 15)),
        "runner_failed_spaces": lambda: privilege.RUNNER_FAILED.search("= " + " 1 failed" * (N // 9)),
        "passed_summary_newlines": lambda: signatures.PASSED_SUMMARY.search("\n" * N),
        "pytest_raises_string_form": sig("pytest_raises_string_form", "TypeError: " * (N // 11)),
        "network_failure": sig("network_failure", "ReadTimeoutError(" * (N // 17)),
        "passes_sections": lambda: signatures.without_passes("= PASSES =\n" * (N // 11)),
        "reported_failing": lambda: runner._REPORTED_FAILING.search("=" * (N // 2) + " 1 failed" * (N // 18)),
        "per_test": lambda: runner.failing_tests("FAILED " + ":" * N),
        "witness_reading": lambda: runner.witness_reading("test_x[" * (N // 7), privilege.Reading(), "test_x"),
        "hacks_pytest": lambda: hacks.signatures(patch + b"pytest " * (N // 7)),
        "hacks_include": lambda: hacks.signatures(patch + b"include " * (N // 8)),
        "swebench_pytest_options": lambda: sp.parse_log_pytest_options("PASSED " + "[" * N, None),
        "swebench_sympy": lambda: sp.parse_log_sympy(" " + ".py:" * (N // 4), None),
        "swebench_django": lambda: sp.parse_log_django("x ... Testing against Django installed in \n" * (N // 42), 0),
        "grade_log": lambda: grading.parse_log("PASSED " + "[1" * (N // 2) + "\n" + "=" * N, "psf/requests"),
        "agent_reply": lambda: rollout.actions("```bash\n" * (N // 8)),
    }


def _timed(name: str, out: multiprocessing.Queue) -> None:
    case = _cases()[name]
    t = time.perf_counter()
    case()
    out.put(time.perf_counter() - t)


@pytest.mark.parametrize("name", sorted(_cases()))
def test_a_crafted_200kb_input_is_read_in_linear_time(name: str):
    # in a child process: a regression must fail the test, not hang the suite (Python's engine took > 20 s on each)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_timed, args=(name, out))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        pytest.fail(f"{name}: still parsing after 30 s")
    assert child.exitcode == 0
    assert out.get(timeout=5) < 2.0


def _instances() -> dict[str, dict]:
    lines = (SWE / "instances.jsonl").read_text().splitlines()
    return {d["instance_id"]: d for d in map(json.loads, lines)}


@pytest.mark.skipif(not LOGS.is_dir(), reason="the shared official logs are not here")
def test_swebench_parsers_on_re2_grade_every_real_log_as_on_pythons_engine():
    from swebench.harness.log_parsers import MAP_REPO_TO_PARSER

    parsers, instances = _parsers(), _instances()
    logs = sorted(LOGS.glob("*/test_output.txt"))
    assert len(logs) >= 40
    for path in logs:
        log = path.read_text(errors="replace")
        parse = MAP_REPO_TO_PARSER[instances[path.parent.name]["repo"]]
        try:
            parsers.re = re
            slow = parse(log, None)
        finally:
            parsers.re = linear.AS_RE
        assert parse(log, None) == slow, path.parent.name


def test_the_scans_that_replace_lookarounds_read_as_the_regexes_did():
    old_passes = re.compile(r"(?ms)^=+ PASSES =+$.*?(?=^=+ short test summary info =+$|\Z)")
    for text in (
        "a\n=== PASSES ===\nx\ny\n=== short test summary info ===\nFAILED t\n== PASSES ==\nz\n",
        "=== PASSES ===\n=== PASSES ===\nq\n=== short test summary info ===\n=== short test summary info ===\nw",
        "no sections\n==== PASSES ====x\n",
    ):
        assert signatures.without_passes(text).rstrip("\n") == old_passes.sub("", text).rstrip("\n")
    for test, name in [
        ("tests/a.py::test_x", "test_x"), ("tests/a.py::test_xy", "test_x"), ("tests/a.py::test_x[1]", "test_x"),
        ("tests/a.py::atest_x", "test_x"), ("test_x", "test_x"), ("test_x test_x2", "test_x2,test_z"),
        ("a::test_x_", "test_x"), ("", "test_x"),
    ]:  # fmt: skip
        old = any(re.search(rf"\b{re.escape(n)}(?![\w])", test) for n in name.split(",") if n)
        assert canary.names(test, name) == old, (test, name)
    allowed = ['open("/proc/self/status")', "/proc/self/stat/", "/proc/cpuinfo", "/proc/meminfo"]
    flagged = ["/proc/1/mem", "/proc/self/statx", "/proc/self", "/proc/$pid/fd", "os.ptrace(1)", "prlimit(0)"]
    for line in allowed + flagged:
        got = hacks.signatures(b"diff --git a/m.py b/m.py\n+x = '" + line.encode() + b"'\n")
        assert ("hack_proc_access" in got) == (line in flagged), line

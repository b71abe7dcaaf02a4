"""The verifier: after the agent, copy `tests/` in, run `tests/test.sh` with its timeout, grade.

The agent never sees the tests (they are copied in only now, over anything the agent left at
/tests), and stale reward files are deleted first so an old reward can never be read back.
When `tests/config.json` lists FAIL_TO_PASS / PASS_TO_PASS, the test log is graded per test
(`trialbook.verify.grading`); otherwise the reward comes from /logs/verifier/reward.txt or
reward.json. A task graded per test also gets a canary, a test that must fail, among its own
(verify/canary.py): the staged test.sh plants it just before the test command runs.
"""

from __future__ import annotations

import base64
import io
import tarfile
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING

from pydantic import BaseModel

from trialbook import tokens
from trialbook.capped import CappedSink
from trialbook.outcomes import REWARD_FILES, ErrorKind, parse_reward
from trialbook.sandbox import Box
from trialbook.sandbox.box import (
    KILLED_FROM_OUTSIDE,
    NO_TOOLS,
    OUTPUT_TAIL,
    DaemonError,
    ExecResult,
    unpack_inline,
)
from trialbook.tasks import TaskSpec
from trialbook.verify import canary as canaries
from trialbook.verify import linear, sources, staged, task_facts
from trialbook.verify.canary import Planted, PlantMode, plant
from trialbook.verify.channels import canary_in_reports, disagreement, test_function
from trialbook.verify.markers import Seal, seal
from trialbook.verify.onerun import shown_status, witness_reading
from trialbook.verify.privilege import Reading, Separated, exit_contradicts_log, read_markers, separate, staging
from trialbook.verify.twins import forged_ids, unrename

if TYPE_CHECKING:
    from trialbook.verify.grading import GradeResult

TESTS_DIR = "/tests"
LOG_DIR = "/logs/verifier"
# bytes of the verifier's output kept on the harness's disk (its tail, OUTPUT_TAIL, is in memory besides): code under
# test printing without end had filled that disk (tests/harness/test_carry_timeout.py)
LOG_DISK_LIMIT = 1 << 30
CGROUP = "cgroup"  # the section of the script's output with the limit counters
NOT_A_FILE = "not-a-file"  # the section naming the reward paths that are there but are no plain file
# a file printed line by line by the running shell's builtins (no fork, no tool the code under test could replace);
# its last line may lack a newline
READ_FILE = 'while IFS= read -r l || [ -n "$l" ]; do printf \'%s\\n\' "$l"; l=; done'
SPOOL = 256 << 10  # bytes of the verifier's output held in memory before it goes to a temporary file
INLINE_LIMIT = 96_000  # base64 characters; one argv string may hold at most 128 KiB on Linux


class VerifierTimeoutError(Exception):
    kind = ErrorKind.VERIFIER_TIMEOUT

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class RewardFileNotFoundError(Exception):
    kind = ErrorKind.REWARD_FILE_NOT_FOUND

    def __init__(self, message: str, log: str) -> None:
        super().__init__(message)
        self.log = log


class GraderUnavailableError(Exception):
    """The task lists FAIL_TO_PASS / PASS_TO_PASS but the per-test grader cannot be imported."""

    kind = ErrorKind.GRADER_UNAVAILABLE


class Verdict(BaseModel):
    reward: float
    graded_by: str  # "test_log" or "reward_file"; "timeout" (a hang the agent's change caused, verify/blame.py),
    # "change_too_large" (its tree outgrew the sandbox's limits when carried, verify/isolation._outgrown), "limits"
    # (the tests outgrew them with the change, not without it, verify/blame.limits)
    tests: dict[str, dict[str, str]] | None = None
    p2p_regression: bool = False
    conflicts: list[str] = []  # tests the log reports both passing and failing (verify/grading.parse_log)
    foreign_rewards: list[str] = []  # reward files the task's tests never name, left unread (written by the code)
    output_cut: bool = False  # the output ran past LOG_DISK_LIMIT: graded on its first LOG_DISK_LIMIT bytes and tail
    outlived: int = 0  # processes still running when test.sh exited (killed before the rewards were read)
    killed: bool = False  # the verifier's script was killed from inside the sandbox (graded as failing)
    canary: str | None = None  # the canary test's name (verify/canary.py); None: none planted
    canary_seen: str | None = None  # what the log said: failed, passed (graded failing), skipped, missing, hidden
    # graded per test: the reward is the strict verdict (verify/grading.strict_verdict), `official_reward` swebench's
    # (leaderboard parity); `not_gold`: the listed tests without their gold status, and what the log said of them
    official_reward: float | None = None
    not_gold: dict[str, str] = {}
    markers_forged: bool = False  # a segment marker without this run's nonce (verify/markers.py) in the log
    seal: dict[str, str] | None = None  # the segment markers' nonces (verify/markers.Seal.as_record), for a regrade
    exit_disagrees: bool = False  # a reward of 1 from the exit status while the log reports a failure (exit_disagrees)
    # how the test command ran (verify/privilege.py): "setpriv" or "python3" (as its own uid), "root" (the image gave
    # no way to drop root), None (no test command found in test.sh: it ran as test.sh's user)
    tests_user: str | None = None
    rewards_by_tests: list[str] = []  # reward files the tests' uid wrote (removed before test.sh went on)
    # graded by a reward file: reward paths left as no plain file (a folder, a link, a fifo) when test.sh ended, the
    # change's doing, graded 0 (tag `reward_not_a_file`) rather than an infra error retried alone (threat model, G16)
    rewards_not_files: list[str] = []
    exit_contradicts_log: bool = False  # a test command exited 0 after its runner reported a failure: graded 0
    channels: str | None = None  # why exit status, text log and junit report disagree (verify/channels.py): 0
    file_reward: float | None = None
    exit_code: int | None = None
    log: str = ""
    duration_s: float = 0.0


def _grader() -> Callable[..., GradeResult]:
    """`grade_test_log`, imported only when a task has test lists (swebench is a heavy import).

    A task that lists its tests must be graded per test: when the grader cannot be imported the
    trial fails with one line naming the cause, instead of quietly falling back to reward files.
    """
    from trialbook.extras import MissingExtraError

    try:
        from trialbook.verify.grading import grade_test_log
    except (ImportError, MissingExtraError) as exc:
        raise GraderUnavailableError(f"per-test grading needs swebench, which failed to import: {exc}") from None
    return grade_test_log


def _status_lines() -> Callable[..., str]:
    """`grading.status_lines`, imported only when a big log is graded (as `_grader`)."""
    _grader()  # the same one-line error when swebench cannot be imported
    from trialbook.verify.grading import status_lines

    return status_lines


def _tests_tar(
    task: TaskSpec, arcname: str, script: str | None, gzip: bool = False, logs: bool = False,
    snap: staged.Snapshot | None = None,
) -> bytes:  # fmt: skip
    """The task's tests/ at `arcname`, its test.sh replaced by `script` when given (the canary planted); with
    `logs`, also empty `logs/` and `logs/verifier/` (to extract at / after the script removed them).

    A task graded per test is graded by the harness from its lists: its config.json (the F2P/P2P lists, which
    name the tests a change could spare or fake) stays out of the container the tests run in. The folder's members
    come from its snapshot (verify/staged.py: read once per task, read again when it changed)."""
    hidden = frozenset({"test.sh" if script is not None else "", "config.json" if task.lists_tests else ""} - {""})
    extra: list[tuple[tarfile.TarInfo, bytes]] = []
    if script is not None:
        data = script.encode()
        info = tarfile.TarInfo(f"{arcname}/test.sh")
        info.size, info.mode = len(data), 0o755
        extra.append((info, data))
    for name in ("logs", LOG_DIR.strip("/")) if logs else ():
        info = tarfile.TarInfo(name)
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        extra.append((info, b""))
    snap = snap or staged.snapshot(task.tests_dir)
    if snap is not None:
        return snap.tar_gz(hidden, extra) if gzip and arcname == staged.ARCNAME else snap.tar(arcname, hidden, extra)
    buf = io.BytesIO()  # too big to keep, or unreadable: archived from disk
    dropped = {f"{arcname}/{name}" for name in hidden}
    with tarfile.open(fileobj=buf, mode="w:gz" if gzip else "w") as tar:
        tar.add(str(task.tests_dir), arcname=arcname, filter=lambda info: None if info.name in dropped else info)
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buf.getvalue()


def _inline_tests(task: TaskSpec, stage: str, script: str | None, snap: staged.Snapshot | None = None) -> str | None:
    """Shell that unpacks the tests from an inline base64 tar.gz, or None when they are too big."""
    payload = base64.b64encode(_tests_tar(task, "tests", script, gzip=True, snap=snap)).decode()
    return unpack_inline(payload, stage) if len(payload) <= INLINE_LIMIT else None


def _put_tests(
    sandbox: Box, task: TaskSpec, stage: str, script: str | None, snap: staged.Snapshot | None = None
) -> None:
    sandbox.put_tar("/", _tests_tar(task, f"{stage}/tests".strip("/"), script, snap=snap))


def _planted(task: TaskSpec, witness: bool = False, snap: staged.Snapshot | None = None) -> Planted | None:
    """The task's test.sh with a canary planted, for a task graded per test whose test command was found; with
    `witness`, for one graded by its reward file too (a run of its own: the canary fails an honest run as well);
    """
    if not task.lists_tests and not witness:
        return None
    facts = task_facts.of(task, snap)
    taken, derivable = sources.taken_names(task, facts), sources.derivable(task, facts)
    # twins beside the listed tests, or beside any in a reward-file task's run (verify/twins.py)
    lists = (task.fail_to_pass or [], task.pass_to_pass or [])
    modules = sources.module_texts(task, facts)
    return plant(facts.script, tokens.token_hex(6), taken, None, derivable, mode=PlantMode(lists, modules))


def _script(stage: str, mark: str, limits: str, unpack: str | None = None, prepare: str = "") -> str:
    """Fresh /tests and /logs/verifier, run test.sh, count and kill what outlived it, then print the reward
    files and the container's limit counters (read from inside: its cgroup goes with it) after a marker.

    One command instead of prepare + run + copy-out; `unpack` (Sandbox.inline_unpack of `_tests_tar`) puts
    the tests in from the script's own text, else they were put at `<stage>/tests` before. The code under test
    runs as test.sh's user and can read this script (so the marker) from /proc; a process it left running could
    print after test.sh. So every process but PID 1 and this shell is killed first (live ones counted; zombies,
    which PID 1 may never reap, are not), and `_split` reads the files only after the last `end` marker, which
    nothing alive can print after. `prepare`: root's shell between the staging and test.sh (privilege.staging).
    A reward file is read only when the script's own user (root) owns it: the tests run as another
    (verify/privilege.py).
    """
    staged = f"( {unpack})" if unpack else f"mkdir -p {LOG_DIR} && mv {stage}/tests {TESTS_DIR} && rm -rf {stage}"
    return (
        # (tests with the shell's builtins first: in a fresh container there is mostly nothing to remove)
        f"for p in {TESTS_DIR} {LOG_DIR}; do {{ [ -e $p ] || [ -L $p ]; }} && rm -rf $p; done\n"
        "{ [ -e /logs ] || [ -L /logs ]; } && { [ ! -d /logs ] || [ -L /logs ]; } && rm -rf /logs\n"
        f"{staged} || {{ echo 'trialbook: could not stage the tests' >&2; exit 97; }}\n" + prepare +
        # sourced: bash reads all of it before it runs a line (a script it reads as it runs, and the code under
        # test could rewrite what test.sh does after the tests: tests/harness/cheats/test_sh_rewritten.sh)
        f"bash -c '. \"$0\"' {TESTS_DIR}/test.sh\nrc=$?\n"
        "left=0\n"
        "for p in /proc/[0-9]*; do\n"
        '  p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = "$$" ] && continue\n'
        '  st=""; read -r st 2>/dev/null < "/proc/$p/stat"; st=${st##*) }\n'
        '  [ -n "$st" ] && [ "${st%% *}" != Z ] && left=$((left + 1))\n'
        "done\n"
        '[ "$left" -gt 0 ] && kill -9 -1 2>/dev/null\n'
        f"printf '\\n{mark}end %s\\n' $left\n"
        # a reward path that is not a plain file (a folder, a link, a fifo: the tests' uid may make one in the sticky
        # folder, where test.sh's own write then fails) is the change's doing: named, graded 0 (verify, NOT_A_FILE)
        f"nf=; for f in {' '.join(REWARD_FILES)}; do\n"
        f'  {{ [ -L {LOG_DIR}/$f ] || {{ [ -e {LOG_DIR}/$f ] && [ ! -f {LOG_DIR}/$f ]; }}; }} && nf="$nf $f"\n'
        "done\n"
        f'[ -n "$nf" ] && printf \'\\n{mark}{NOT_A_FILE}\\n%s\\n\' "$nf"\n'
        f"for f in {' '.join(REWARD_FILES)}; do\n"
        # a link is not read: a reward.txt linked to a read-only file that reads 1 (/proc/sys/fs/protected_hardlinks)
        # keeps test.sh's 0 from being written (tests/harness/cheats/reward_symlink.sh); nothing else runs by now.
        # Read by the shell's own `read`, no tool of the image: the code under test may have replaced cat with one
        # that prints 1 for a reward file (tests/harness/cheats/cat_at_import.sh)
        f"  [ -f {LOG_DIR}/$f ] && [ ! -L {LOG_DIR}/$f ] && [ -O {LOG_DIR}/$f ] && {{ printf '\\n{mark}%s\\n' $f\n"
        f"    {READ_FILE} < {LOG_DIR}/$f; }}\n"
        "done\n"
        f"printf '\\n{mark}{CGROUP}\\n'\n" + limits + "exit $rc\n"
    )


def _split(output: str, mark: str) -> tuple[str, dict[str, str], int | None]:
    """The test log, the reward files and the count of processes that outlived test.sh: everything after
    the last `end` marker is the harness's (a marker printed earlier by the code under test stays in the
    log); no `end` marker (the script cut short) means no files and a count of None."""
    log, found, rest = output.rpartition(f"\n{mark}end ")
    if not found:
        return output, {}, None
    count, *parts = rest.split(f"\n{mark}")
    files = {}
    for part in parts:
        name, _, content = part.partition("\n")
        files[name] = content
    return log, files, int(n) if (n := count.strip()).isdigit() else 0


def _run_last(
    sandbox: Box,
    task: TaskSpec,
    stage: str,
    mark: str,
    timeout: float,
    full: CappedSink,
    separated: Separated,
    snap: staged.Snapshot | None = None,
) -> ExecResult | None:
    """The tests put in a fresh container (inline in the script when they are small), the script run as its last process
    (Box.finish: PID 1 itself, which nothing in the container can kill or speak after; no `docker exec`,
    ~0.05 CPU s of the daemon's host); None when it has no channel. `separated`: the staged test.sh and its
    preparation."""
    if sandbox.channel is None:
        return None
    test_sh, prepare = separated.script, staging(separated)
    unpack = sandbox.inline_unpack(_tests_tar(task, TESTS_DIR.strip("/"), test_sh, logs=True, snap=snap))
    if unpack is None:
        _put_tests(sandbox, task, stage, test_sh, snap)
    res = sandbox.finish(_script(stage, mark, sandbox.limits_script(), unpack, prepare), timeout=timeout, sink=full)
    if (
        res is not None and res.exit_code in KILLED_FROM_OUTSIDE and not res.timed_out and not sandbox.stop.is_set()
        and f"\n{mark}end " not in res.output and not any(sandbox.limit_hits().values())
    ):  # fmt: skip
        # the script was cut before its end (no end marker) by a kill that came from outside: PID 1 ignores every
        # signal from inside its namespace, trialbook did not stop it (no timeout, no stop) nor did a memory limit.
        # A daemon stopping kills its containers so (SIGTERM, then SIGKILL): a cut log, never a grade
        raise DaemonError(f"{sandbox.name} was killed from outside (exit {res.exit_code}): its daemon stopped?")
    return res


# a failing test in pytest's own words: a -rA summary line, or its final count ("=== 1 failed, 2 passed in 0.1s ===")
# (the log is the code under test's output: every pattern over it is RE2's, linear in it: verify/linear.py)
_REPORTED_FAILING = linear.compile(
    r"(?m)^(?:FAILED|ERROR) \S+::|^=+ (?:\d+ \w+, )*\d+ (?:failed|errors?)\b.* in [\d.]+ ?s"
)


def exit_disagrees(task: TaskSpec, log: str, file_reward: float | None, snap: staged.Snapshot | None = None) -> bool:
    """A reward of 1 from a test.sh that reads the test command's exit status, while pytest's own report in the log
    says a test failed: the exit status lied (the code under test ended the process with status 0 after the report,
    `atexit` + `os._exit(0)`). Graded 0, tagged `exit_status_disagrees`. A test.sh turns the test command's exit
    status into its reward (task_facts.TaskFacts.exit_decides): then its reward and the runner's report are two
    channels that must agree."""
    if file_reward is None or file_reward < 1.0 or not task_facts.of(task, snap).exit_decides:
        return False
    return _REPORTED_FAILING.search(linear.strip_ansi(log)) is not None


_PER_TEST = linear.compile(r"(?m)^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+::\S+)")


def per_test_lines(log: str) -> bool:
    """Whether the log has pytest's per-test result lines (-rA)."""
    return _PER_TEST.search(linear.strip_ansi(log)) is not None


def _planted_id(test: str, planted: str | None) -> bool:
    """Whether the test id `test` names one of the tests `planted` (comma-separated function names)."""
    return bool(planted) and test_function(test) in (planted or "").split(",")


def failing_tests(log: str, planted: str | None = None) -> frozenset[str]:
    """The tests pytest's per-test lines report FAILED or ERROR (the verifier's `planted` tests left out)."""
    return frozenset(
        m.group(2) for m in _PER_TEST.finditer(linear.strip_ansi(log))
        if m.group(1) in ("FAILED", "ERROR") and not _planted_id(m.group(2), planted)
    )  # fmt: skip


def passing_tests(log: str) -> frozenset[str]:
    """The tests pytest's per-test lines report PASSED (and never failing: a forged line beside a real failure)."""
    seen = [(m.group(1), m.group(2)) for m in _PER_TEST.finditer(linear.strip_ansi(log))]
    return frozenset(t for s, t in seen if s == "PASSED") - failing_tests(log)


def status_forged(log: str, ran: Reading, planted: str, file_reward: float | None) -> bool:
    """One run (verify/onerun.py): a resolving reward while the status root gave test.sh differs from the one the
    run's junit report gives (onerun.shown_status: the report read two ways), or pytest's per-test lines report a
    test failing that the verifier did not plant (runner.exit_disagrees, planted tests left out)."""
    if file_reward is None or file_reward < 1.0:
        return False
    shown = [shown_status(st, report, planted) for st, report in zip(ran.report_exits, ran.reports, strict=False)]
    return shown != ran.report_shown or bool(failing_tests(log, planted))


def witnessable(task: TaskSpec) -> bool:
    """Whether a canary can be planted in a task graded by its reward file (`verify(..., witness=True)`)."""
    return not task.lists_tests and _planted(task, witness=True) is not None


def one_run(task: TaskSpec, snap: staged.Snapshot | None = None) -> bool:
    """Whether a task graded by its reward file is graded in one run that is its own witness (verify/onerun.py): where
    a canary can be planted (witnessable), test.sh turns the test command's exit status into its reward and reads
    nothing else of the run (task_facts.TaskFacts.reads_the_run: a count it read would change with the planted tests),
    and that command is a pytest run with no junit report of its own (canary.pytest_command), whose report tells root
    what the planted tests did. Elsewhere a witness run beside the graded run holds the canaries (verify/witness.py).
    Known once per task (its facts)."""
    facts = task_facts.of(task, snap)
    if facts.one_run is None:
        facts.one_run = (
            witnessable(task) and facts.exit_decides and not facts.reads_the_run and facts.pytest_command
        )  # fmt: skip
    return facts.one_run


def verify(sandbox: Box, task: TaskSpec, timeout: float, witness: bool = False) -> Verdict:
    """Run the task's verifier in `sandbox`; `witness`: with a canary planted even when the task is graded by its
    reward file (its reading is then the verdict's canary_seen: witness_reading)."""
    # every nonce of the run from one read of the system's random source (one syscall: each costs a wait for the GIL
    # with a thousand trials in flight, benchmarks/bench_scale.py)
    fresh = tokens.token_hex(6 + 8 + 8 + 8)
    token = fresh[:12]
    stage, mark = f"/.trialbook-{token}", f"@@trialbook-{token}@@ "
    snap = staged.snapshot(task.tests_dir)  # the tests/ folder as read once for every trial of the task
    facts = task_facts.of(task, snap)  # what its tests say, derived once per task
    original = facts.script.text
    inline = not task.lists_tests and one_run(task, snap)  # the graded run is its own witness (verify/onerun.py)
    planted = _planted(task, witness or inline, snap)
    # The nonces of the staged test.sh are not `token`, which the outer script's command line shows to every uid
    nonce, markers = fresh[12:28], Seal(fresh[28:44], fresh[44:60])
    sealed, _ = seal(planted.script if planted else original, markers)
    hidden = tuple(planted.name.split(",")) if inline and planted else ()  # their failures left out of the status
    separated: Separated = separate(facts.script.edited(sealed), nonce, hidden)
    test_sh = separated.script
    prepare = staging(separated)
    script = _script(stage, mark, sandbox.limits_script(), prepare=prepare)
    # the whole output, on disk up to LOG_DISK_LIMIT (in memory up to SPOOL: a file opened and closed per run cost
    # ~0.2 ms of the driver's time, benchmarks/bench_scale.py); memory holds its tail besides
    with tempfile.SpooledTemporaryFile(max_size=SPOOL) as full:
        capped = CappedSink(full, LOG_DISK_LIMIT)
        diff = task.isolation == "diff"
        res = _run_last(sandbox, task, stage, mark, timeout, capped, separated, snap) if diff else None
        last = res is not None
        # inline tests save a copy into the container, but an exec's command line is readable by every uid in it: the
        # staged test.sh's nonces would be too, so only a script without them goes inline
        secret = test_sh != original
        if res is None and not secret and (unpack := _inline_tests(task, stage, test_sh, snap)) is not None:
            res = sandbox.exec(["bash", "-c", unpack + script], timeout=timeout, sink=capped, trusted=True)
        if res is None or (not last and res.exit_code == NO_TOOLS):  # no base64/tar in the image, or too big
            full.seek(0)
            full.truncate()
            capped = CappedSink(full, LOG_DISK_LIMIT)
            _put_tests(sandbox, task, stage, test_sh, snap)
            res = sandbox.exec(["bash", "-c", script], timeout=timeout, sink=capped, trusted=True)
        log, files, outlived = _split(res.output, mark)
        log, ran = read_markers(log, nonce)
        # the real tests' names as the task's lists say them (twins)
        made, forged = planted.twins if planted else (), []
        if made:
            forged = forged_ids(log, ran.reports, made)
            log = unrename(log, made)
            ran.reports = [None if r is None else unrename(r, made) for r in ran.reports]
        tests_user = ran.how[0] if ran.how else None
        contradicted = exit_contradicts_log(ran)
        counters = files.pop(CGROUP, None)
        not_files = sorted(set(files.pop(NOT_A_FILE, "").split()))
        if last and counters is not None:
            sandbox.report_limits(counters)
        if res.timed_out:
            raise VerifierTimeoutError(f"tests/test.sh ran past its {timeout:g} s limit", log)
        # a reward file the task's tests never name is not its verifier's: code under test wrote it (a reward.txt of 1
        # beside the reward.json test.sh writes would win: tests/harness/cheats/foreign_reward_file.sh)
        named = facts.script.rewards
        foreign = sorted(name for name in files if name not in named)
        file_reward = parse_reward({name: text for name, text in files.items() if name in named})
        # Killed from inside the sandbox (the harness kills only on a timeout; a memory or pids limit is read from
        # the cgroup by `grade`), that is by the code under test, whose failure is graded, never a free "no grade":
        # as the container's last process the script cannot be killed, so test.sh died of a signal (it exited
        # above 128) without a reward; as an exec, the script died of a signal before its end marker while the
        # container still runs.
        if last:
            killed = outlived is not None and (res.exit_code or 0) > 128 and file_reward is None
        else:
            killed = outlived is None and (res.exit_code or 0) > 128 and sandbox.running()
        text, has_lists = log, task.lists_tests
        if has_lists and full.tell() > OUTPUT_TAIL:
            # The tail lost the head of the log, where a FAILED line may be that a flood of output pushed
            # out: grade every line of the whole output that can carry a status.
            full.seek(0)
            # (the separation's marker lines kept, so that the junit reports they enclose are taken out as above)
            kept = _status_lines()(full, task.repo, (mark, f"@@trialbook-tests-{nonce}@@"))
            text = read_markers(_split(kept, mark)[0], nonce)[0]
            if made:
                forged = forged or forged_ids(text, [], made)
                text = unrename(text, made)
    if has_lists:
        canary = planted.name if planted else None
        lists = (task.fail_to_pass or [], task.pass_to_pass or [])
        graded = _grader()(text, task.repo, *lists, task.task_id, canary, task.gold_statuses, markers)
        channels = disagreement(
            ran.reports, ran.report_exits, graded.statuses, [*lists[0], *lists[1]], graded.strict, original
        )  # fmt: skip
        if forged and channels is None:  # a result under a name no test of the run has (verify/twins.forged_ids)
            channels = f"the run reports {forged[0]} under its task name, which no test of the run has"
        seen = graded.canary
        if canary and ran.reports and graded.canary != canaries.PASSED:
            in_report = canary_in_reports(ran.reports, canary)  # the runner's own channel for the canaries
            if in_report == canaries.PASSED:
                seen = canaries.PASSED
            elif in_report in (canaries.MISSING, None) and graded.strict and channels is None:
                channels = "the canaries the text log reports are not in the junit report"
        return Verdict(
            reward=1.0 if graded.strict and not contradicted and channels is None and seen != canaries.PASSED else 0.0,
            channels=channels,
            official_reward=1.0 if graded.resolved else 0.0,
            not_gold=graded.not_gold,
            markers_forged=graded.markers_forged,
            seal=markers.as_record(),
            graded_by="test_log",
            tests=graded.tests,
            p2p_regression=bool(graded.p2p_regression),
            conflicts=graded.conflicts,
            foreign_rewards=foreign,
            output_cut=capped.over,
            canary=canary,
            canary_seen=seen,
            outlived=(outlived or 0) + ran.left,
            killed=killed,
            file_reward=file_reward,
            exit_code=res.exit_code,
            tests_user=tests_user,
            rewards_by_tests=ran.rewards_by_tests,
            exit_contradicts_log=contradicted,
            log=log,
            duration_s=res.duration_s,
        )
    if killed:
        return Verdict(reward=0.0, graded_by="reward_file", killed=True, exit_code=res.exit_code, log=log,
                       duration_s=res.duration_s, tests_user=tests_user, rewards_by_tests=ran.rewards_by_tests,
                       exit_contradicts_log=contradicted, rewards_not_files=not_files)  # fmt: skip
    if file_reward is None and not not_files:
        raise RewardFileNotFoundError(
            f"tests/test.sh exited {res.exit_code} without writing {LOG_DIR}/reward.txt or reward.json", log
        )
    return Verdict(
        reward=0.0 if contradicted or not_files or file_reward is None else file_reward,
        # graded 0 by verify/blame.reward_file
        exit_disagrees=status_forged(log, ran, planted.name, file_reward)
        if hidden and planted
        else exit_disagrees(task, log, file_reward, snap),
        graded_by="reward_file",
        rewards_not_files=not_files,
        foreign_rewards=foreign,
        output_cut=capped.over,
        outlived=(outlived or 0) + ran.left,
        canary=planted.name if planted else None,
        canary_seen=witness_reading(log, ran, planted.name) if planted else None,
        file_reward=file_reward,
        exit_code=res.exit_code,
        tests_user=tests_user,
        rewards_by_tests=ran.rewards_by_tests,
        exit_contradicts_log=contradicted,
        log=log,
        duration_s=res.duration_s,
    )

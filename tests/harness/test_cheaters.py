"""The cheating-agent suite: each cheat is the oracle's solve.sh on a copy of examples/tasks/plain-bugfix
with the correct fix absent. Every one must end graded and unresolved (README: "Cheats and outcomes").

The kinds are the ones seen resolved (or left ungraded) when the verifier ran in the agent's own
container: tests rewritten at verify time, a function in the shell-setup file, a forcing conftest.py,
python3/cat wrappers, fake PASSED lines, SIGSTOP on pytest, /logs replaced by a file, 700 forks, plus
a pytest.ini plugin, a sitecustomize.py and a pre-seeded reward; a pytest.py shadowing the runner; two that spare
the canary: a plugin that package metadata in the working tree registers, reports forced from a tests/__init__.py;
a canary-sparing conftest.py followed by 4.5 MB of file names; a 300 MB file, too big to carry in the memory limit;
the image's ignored build/ folder turned into a file; a path longer than PATH_MAX; a `tar` of the agent's own whose
archive names a conftest.py in a pax header; a .gitattributes asking for an encoding the files do not have; a nested
repository without a commit, names git refuses (`.GIT`, `.git.`, `GIT~1`, a `.gitmodules` link); a git warning
provoked before the list of changed paths; /logs replaced by a file from the code under test, 4 GB allocated by it,
the rest of the running test.sh rewritten by it, a reward.txt of 1 written by it beside the reward.json test.sh
writes; and
nine that act from inside the change's own code while the tests run: PASSED lines printed at exit, the
same after a 5 MB flood, the verifier's marker forged into its output, a process left running to rewrite
the reward, every process killed (test.sh too; the verifier's script where it can) so that no reward is read,
cat replaced by one that prints 1 for a reward file (the verifier's script reads them with its shell's builtins),
pytest's own test call made a no-op, every report pytest builds forced to "passed" (the verifier's canary,
a test that must fail, catches these two), PASSED lines written past pytest's capture and an exit before it reports
(no canary at all, while there is one without the change); and three tried on a copy whose verifier loads its
tests by module name through the repository's own runner, as Django's does: a package of the test module's name,
an unchecked .pyc of it, the runner itself rewritten.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
CHEATS = Path(__file__).resolve().parent / "cheats"
# the cheats that act through processes or harness files: also tried with isolation = "container"
IN_CONTAINER = [
    "bg_rewrite_tests", "shell_setup_function", "fake_passed_at_exit", "sigstop_pytest", "logs_replaced_by_file",
    "fork_700", "runner_noop",
]  # fmt: skip
# the cheats aimed at reward files: also tried on a copy graded by its reward file (no tests/config.json)
REWARD_FILE = [
    "cat_wrapper", "fake_passed_at_exit", "logs_replaced_by_file", "reward_preseeded", "fork_700", "kill_everything",
    "logs_replaced_at_import", "memory_hog_at_import", "test_sh_rewritten", "reward_rewriter", "reward_symlink",
    "reward_then_kill", "runner_noop", "exit0_at_import", "cat_at_import",
]  # fmt: skip
# the cheats aimed at a reward file from a process left running: also tried on a copy graded in the agent's own
# container by its reward file
REWARD_FILE_CONTAINER = ["reward_rewriter", "reward_symlink", "reward_then_kill", "exit0_at_import", "cat_at_import"]
# the cheats aimed at what test.sh runs after the tests: also tried on a copy whose test.sh writes its reward with a
# grader of its tests (`python3 /tests/grade.py "$rc"`, no tests/config.json); graded 0 by what the tests left changed
# outside the working tree (verify/blame.changed_outside). The cat cheat is read past by the shell's builtins. Since the
# test command runs as its own uid (verify/privilege.py) neither /tests nor python3 is the tests' to change: they lose
# without a trace there (verify/blame.changed_outside stays the check for an image whose test command is not separated)
GRADER = ["grader_rewritten", "python_replaced_at_import", "cat_at_import"]
CHANGED_OUTSIDE: set[str] = set()
GRADER_SH = (
    # a tool test.sh installs itself before the tests and runs after them: changed in both runs, the grade stands
    "printf '#!/bin/sh\\nexec python3 \"$@\"\\n' > /usr/local/bin/tb-grade && chmod +x /usr/local/bin/tb-grade\n"
)
GRADE_PY = 'import sys\n\nprint(1 if sys.argv[1] == "0" else 0)\n'
# the cheats aimed at a reward.json: also tried on a copy whose test.sh writes reward.json (no tests/config.json)
REWARD_JSON = ["foreign_reward_file"]
# the cheats aimed at a runner that imports its tests by name: also tried on a copy whose test command is the
# repository's own runner, `python3 runtests.py tests.test_stats` (unittest labels, as Django's tests/runtests.py)
BY_NAME = ["package_shadow", "pyc_shadow", "runner_rewrite"]
TEST_INFRA = {
    "conftest_force_pass", "pytest_ini_plugin", "hidden_pytest_ini", "reward_preseeded", "runner_shadow",
    "package_shadow", "dist_info_plugin", "test_package_init", "names_past_tail", "pax_path_header",
    "warning_before_names",
}  # fmt: skip
# the change too big to carry within the task's limits (the image's own tree fits): graded 0, not infra_error
TOO_LARGE = {"big_file"}
TEST_INFRA_BY_NAME = {"runner_rewrite"}  # test infrastructure where the test command names the runner
# the change's own code forging the log from inside the test process (verify/grading.parse_log, runner._split)
# (forged_marker no more: the verifier's marker is in root's memory and root's files, which the tests cannot read)
CONFLICTING = {"atexit_passed_lines", "flood_then_passed"}
OUTLIVED = {"lingering_rewriter", "reward_rewriter"}  # a process of the test run still alive when test.sh exits
# cheats that kill every process they can: test.sh had been killed so; as the test command's own uid they reach only
# the tests' processes (verify/privilege.py), so nothing of the verifier is killed (no `verifier_killed`) and
# reward_then_kill, whose test process then exits 0 before any test ran, is caught as exit0_at_import is
KILLED = {"kill_everything", "reward_then_kill"}
# pytest made to pass what fails, its report consistent: the verifier's canary, a test that must fail, is reported
# passing (verify/canary.py). By the change's own code, and, a second catch, by the forcing test-infra cheats
SUBVERTED = {"runner_noop", "report_forced", "conftest_force_pass", "pytest_ini_plugin", "hidden_pytest_ini"}
# ... and those that spare what looked like the canary (`test_<12 hex>`, or "canary" in its body): it is now named and
# written like the task's own tests (verify/decoys.canary_name), so they pass it too (docs/threat-model.md)
SUBVERTED |= {"dist_info_plugin", "test_package_init", "names_past_tail", "pax_path_header", "warning_before_names",
              "forged_then_exit"}  # fmt: skip
# PASSED lines written to the test process's real stdout, then an exit before pytest reports: no canary at all, while
# the verifier run once without the change reports it failing (verify/blame.missing_canary); also the
# pytest.py that replaces the runner with PASSED lines (a second catch)
HIDDEN = {"runner_shadow"}
# ... which, graded per test, pytest's junit report answers first: the text log resolves, no report was written (the
# pytest run never ran), so exit status, text and report disagree (verify/channels.py: graded 0 before the canary)
# and PASSED lines printed at the end for the tests it saw (CONFLICTING): the twinned ones under their task names,
# which name no test of the run before names are mapped back (verify/twins.forged_ids)
CHANNELS = {"runner_shadow"} | CONFLICTING
# a reward file's verifier resolved by a runner made to pass what fails, or a test process that ended with status 0
# before any test ran: the canaries its own graded run held (one run, verify/onerun.py; verify/blame.unwitnessed_reward)
# are reported passing (the first) or not at all, while they are reported failing on the image as built (the second)
WITNESS_PASSED = {"runner_noop"}
WITNESS_HIDDEN = {"exit0_at_import", "reward_then_kill"}
# the reward file a cheat writes from the test process (or links), removed before test.sh writes its own
# (verify/privilege.py: tag reward_written_by_tests); the rewriters' (OUTLIVED) too when they ran before the kill
REWARD_WRITERS = {"reward_symlink", "reward_then_kill", "foreign_reward_file"}
HONEST_INFRA = "\necho '# a harmless conftest.py next to a real fix' > /testbed/conftest.py\n"
# a real fix next to a repository without a commit (a test fixture, say): its files are carried, not its .git
HONEST_NESTED = "\nmkdir -p /testbed/fixture && cd /testbed/fixture && git init -q && echo data > data.txt\n"
# a task whose own test.sh leaves a process running (a test server, say): a real fix graded by its reward file still
# resolves, the process outliving test.sh without the change too
LINGERING_TESTS = "#!/bin/bash\n( exec sleep 300 ) &\n"
UNITTEST_TESTS = """import unittest

from stats import mean, median


class TestStats(unittest.TestCase):
    def test_mean(self):
        self.assertEqual(mean([1, 2, 3, 4]), 2.5)

    def test_median_odd(self):
        self.assertEqual(median([3, 1, 2]), 2)

    def test_median_even(self):
        self.assertEqual(median([4, 1, 3, 2]), 2.5)
"""
RUNNER = """import sys
import unittest

suite = unittest.defaultTestLoader.loadTestsFromNames(sys.argv[1:])
sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
"""
UNITTEST_SH = """#!/bin/bash
# The task's tests loaded by module name through the repository's runner (as Django's tests/runtests.py loads
# its test labels); graded by the reward file.
cd /testbed
mkdir -p tests && cp /tests/test_*.py tests/
python3 runtests.py tests.test_stats
rc=$?
mkdir -p /logs/verifier
if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


IGNORED_BUILD = (
    'RUN mkdir -p build && echo artifact > build/lib.txt && echo "build/" > .gitignore && git add .gitignore'
    " && git -c user.name=trialbook -c user.email=tb@example.invalid commit -qm 'ignore build/'\n"
)


FLAVOURS = ("reward_file", "unittest", "reward_json", "lingering", "grader")  # _copy's keyword flags


def _copy(tasks: Path, name: str, solve: str | None, isolation: str, **flavour: bool) -> None:
    """The example task copied as `name`, with `solve` as its solution, `isolation`, and each flavour given."""
    assert set(flavour) <= set(FLAVOURS), flavour
    reward_file, unittest, reward_json, lingering, grader = (flavour.get(f, False) for f in FLAVOURS)
    task = tasks / name
    shutil.copytree(EXAMPLE, task)
    if solve is not None:
        (task / "solution" / "solve.sh").write_text(solve)
    if grader:
        test_sh = (task / "tests" / "test.sh").read_text().replace("cd /testbed\n", "cd /testbed\n" + GRADER_SH, 1)
        end = 'if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi'
        graded = 'tb-grade /tests/grade.py "$rc" > /logs/verifier/reward.txt'
        (task / "tests" / "test.sh").write_text(test_sh.replace(end, graded))
        (task / "tests" / "grade.py").write_text(GRADE_PY)
    if reward_file or unittest or reward_json or grader:
        (task / "tests" / "config.json").unlink()
    if reward_json:  # the reward as JSON: test.sh names no reward.txt
        test_sh = (task / "tests" / "test.sh").read_text().replace("reward.txt", "reward.json")
        (task / "tests" / "test.sh").write_text(test_sh.replace("echo 1 >", "echo '{\"reward\": 1}' >")
                                                .replace("echo 0 >", "echo '{\"reward\": 0}' >"))  # fmt: skip
    if lingering:
        test_sh = (task / "tests" / "test.sh").read_text()
        (task / "tests" / "test.sh").write_text(test_sh.replace("#!/bin/bash\n", LINGERING_TESTS, 1))
    if unittest:
        (task / "environment" / "repo" / "runtests.py").write_text(RUNNER)
        (task / "tests" / "test_stats.py").write_text(UNITTEST_TESTS)
        (task / "tests" / "test.sh").write_text(UNITTEST_SH)
    with (task / "environment" / "Dockerfile").open("a") as dockerfile:  # build artifacts, as real images hold
        dockerfile.write(IGNORED_BUILD)
    toml = (task / "task.toml").read_text()
    toml = toml.replace("[verifier]\ntimeout_sec = 60", f'[verifier]\ntimeout_sec = 30\nisolation = "{isolation}"')
    (task / "task.toml").write_text(toml + 'shell_setup = "export CHEAT_SUITE=1"\npids_limit = 512\n')


@pytest.fixture(scope="module")
def cheat_run(engine, tmp_path_factory):
    base = tmp_path_factory.mktemp("cheats")
    return base, build_tasks(base)


def build_tasks(base: Path) -> Path:
    """The suite's task copies under base/tasks (tests/harness/test_podman.py runs them on Podman too)."""
    tasks = base / "tasks"
    tasks.mkdir()
    _copy(tasks, "honest", None, "diff")  # the real fix still resolves
    # a real fix that also adds a conftest.py: tagged, graded as usual and resolved
    _copy(tasks, "honestinfra", (EXAMPLE / "solution" / "solve.sh").read_text() + HONEST_INFRA, "diff")
    _copy(tasks, "honest-nested", (EXAMPLE / "solution" / "solve.sh").read_text() + HONEST_NESTED, "diff")
    for script in sorted(CHEATS.glob("*.sh")):
        _copy(tasks, f"diff-{script.stem}", script.read_text(), "diff")
    for kind in IN_CONTAINER:
        _copy(tasks, f"container-{kind}", (CHEATS / f"{kind}.sh").read_text(), "container")
    for kind in REWARD_FILE:
        _copy(tasks, f"rewardfile-{kind}", (CHEATS / f"{kind}.sh").read_text(), "diff", reward_file=True)
    for kind in REWARD_FILE_CONTAINER:
        _copy(tasks, f"containerrf-{kind}", (CHEATS / f"{kind}.sh").read_text(), "container", reward_file=True)
    _copy(tasks, "honest-lingering", None, "diff", reward_file=True, lingering=True)
    for kind in REWARD_JSON:
        _copy(tasks, f"rewardjson-{kind}", (CHEATS / f"{kind}.sh").read_text(), "diff", reward_json=True)
    for kind in GRADER:
        _copy(tasks, f"grader-{kind}", (CHEATS / f"{kind}.sh").read_text(), "diff", grader=True)
    _copy(tasks, "honest-grader", None, "diff", grader=True)  # the real fix resolves the grader copy
    _copy(tasks, "honest-rewardjson", None, "diff", reward_json=True)  # the real fix resolves the reward.json copy
    _copy(tasks, "honest-unittest", None, "diff", unittest=True)  # the real fix resolves the unittest copy
    for kind in BY_NAME:
        _copy(tasks, f"unittest-{kind}", (CHEATS / f"{kind}.sh").read_text(), "diff", unittest=True)
    return tasks


def test_every_cheat_is_graded_unresolved(cheat_run, cli, db):
    base, tasks = cheat_run
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "cheats", "--concurrency", "2",
              "--runs-dir", str(base / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    got = {t["task_id"]: t for t in trial_dicts(ledger, "cheats")}
    cheats = len(list(CHEATS.glob("*.sh"))) + len(IN_CONTAINER) + len(REWARD_FILE) + len(BY_NAME) + len(REWARD_JSON)
    assert len(got) == 7 + cheats + len(REWARD_FILE_CONTAINER) + len(GRADER)
    honest = ("honest", "honestinfra", "honest-unittest", "honest-rewardjson", "honest-nested", "honest-lingering",
              "honest-grader")  # fmt: skip
    assert [got[task]["outcome"] for task in honest] == ["resolved"] * 7
    # resolved by a reward file: graded in one run with canaries that root took out of the status test.sh saw
    # (verify/onerun.py), read failing there
    for task in ("honest-rewardjson", "honest-lingering", "honest-grader"):
        assert got[task]["extra"]["verifier"]["witness"] == {"reward": 1.0, "canary": "failed", "same_run": True}, task
    wrong = {
        task: (t["outcome"], t["exception"], t["exception_message"])
        for task, t in got.items()
        if not task.startswith("honest") and t["outcome"] != "unresolved"
    }
    assert wrong == {}
    for task, t in got.items():
        mode, _, kind = task.partition("-")
        tags = (t["extra"] or {}).get("tags", [])
        infra = mode == "honestinfra" or kind in TEST_INFRA or (mode == "unittest" and kind in TEST_INFRA_BY_NAME)
        assert ("test_infra_changed" in tags) == infra, task
        assert ("conflicting_test_reports" in tags) == (kind in CONFLICTING), task
        if kind not in KILLED:
            assert ("test_processes_outlived" in tags) == (kind in OUTLIVED or task == "honest-lingering"), task
        # a reward file read while processes the change left outlived test.sh (none without the change): graded 0. The
        # rewriter races test.sh's own write and the harness's kill; when it lost, the reward read was test.sh's 0
        # (verify/blame.untrusted_reward is checked without a race in test_reward_file_blame.py)
        by_reward = mode in ("rewardfile", "containerrf")
        rewritten = kind in OUTLIVED and by_reward and (t["extra"].get("file_reward") or 0) > 0
        assert ("outlived_with_change" in tags) == rewritten, task
        assert (t["exception"] == "OutlivedWithChangeError") == rewritten, task
        assert "verifier_killed" not in tags, task
        if kind not in OUTLIVED:
            assert ("reward_written_by_tests" in tags) == (kind in REWARD_WRITERS), task
        assert "tests_not_separated" not in tags, task
        witnessed = by_reward and kind in WITNESS_PASSED | WITNESS_HIDDEN
        channels = kind in CHANNELS and mode in ("diff", "container")
        assert ("channels_disagree" in tags) == channels, task
        hidden = set() if channels else HIDDEN
        assert ("runner_subverted" in tags) == (kind in SUBVERTED | hidden or witnessed), task
        assert "canary_missing" not in tags, task
        seen = (t["extra"].get("canary") or {}).get("seen")  # graded per test (or witnessed): a canary was planted
        assert (seen == "passed") == (kind in SUBVERTED), task
        assert (seen == "hidden") == (kind in hidden or (by_reward and kind in WITNESS_HIDDEN)), task
        if task in ("honest", "honestinfra") or kind in SUBVERTED:
            assert seen == ("passed" if kind in SUBVERTED else "failed"), task
        assert t["extra"]["verifier"]["isolation"] == ("container" if mode in ("container", "containerrf") else "diff")
        assert (t["exception"] == "ChangeTooLargeError") == (kind in TOO_LARGE), task
        # a path past PATH_MAX is not carried (the daemon's copy of it had failed: an ungraded infra error)
        assert ("paths_too_long" in t["extra"]["verifier"]) == (kind == "path_past_path_max"), task
        # no reward with the change while there is one without it (NoRewardWithChangeError) was the catch of /logs
        # replaced and of a reward file linked elsewhere; neither is the tests' to do now (verify/privilege.py)
        no_reward = False
        assert (t["exception"] == "NoRewardWithChangeError") == no_reward, task
        assert ("reward_missing_with_change" in tags) == no_reward, task
        # the tests outgrew the sandbox's limits with the change, not without it: graded 0 (both copies)
        # a reward file the task's tests never name is left unread (the reward.json copy: a reward.txt of 1); the
        # tests' own is removed before that (reward_written_by_tests)
        assert "foreign_reward_file" not in tags, task
        changed = mode == "grader" and kind in CHANGED_OUTSIDE
        assert ("changed_outside_tree" in tags) == changed and (t["exception"] == "ChangedOutsideTreeError") == changed
        hog = kind == "memory_hog_at_import"
        assert (t["exception"] == "LimitsHitWithChangeError") == hog and ("limits_hit_with_change" in tags) == hog, task
    # audit: the signature's share of resolved trials (the honest one that added a conftest.py)
    res = cli("audit", "cheats", "--json")
    assert res.exit_code == 0, res.stderr
    sig = json.loads(res.stdout)["by_signature"]["test_infra_changed"]
    tagged = sum(1 for t in got.values() if "test_infra_changed" in t["extra"]["tags"])
    assert tagged == 15  # 11 test-infra cheats, the reward-file copy of one, two on the unittest copy, honestinfra
    assert (sig["trials"], sig["resolved"], sig["share_of_resolved"]) == (tagged, 1, round(1 / 7, 4))  # of 7 honest
    by_signature = json.loads(res.stdout)["by_signature"]
    assert by_signature["conflicting_test_reports"]["trials"] == len(CONFLICTING)
    outlived = by_signature["test_processes_outlived"]["trials"]
    left = {task for task in got if task.partition("-")[2] in OUTLIVED} | {"honest-lingering"}
    killers = {task for task in got if task.partition("-")[2] in KILLED}
    assert len(left) <= outlived <= len(left) + len(killers)  # + the copies of a killing cheat, or not
    subverted = {task for task, t in got.items() if "runner_subverted" in t["extra"]["tags"]}
    witnessed = {task for task in subverted if task.startswith(("rewardfile-", "containerrf-"))}
    assert witnessed == {f"rewardfile-{k}" for k in WITNESS_PASSED | WITNESS_HIDDEN} | {
        f"containerrf-{k}" for k in WITNESS_HIDDEN
    }
    caught = len((SUBVERTED | HIDDEN) - CHANNELS)  # runner_shadow graded per test: channels_disagree instead
    assert by_signature["runner_subverted"]["trials"] == len(subverted) == caught + 1 + len(witnessed)
    channels = {task for task, t in got.items() if "channels_disagree" in t["extra"]["tags"]}
    assert by_signature["channels_disagree"]["trials"] == len(channels) > 0
    # a re-grade from the stored logs reads the canary by the name recorded with the trial: the same verdicts
    res = cli("regrade", "cheats", "--json")
    assert res.exit_code == 0, res.stderr
    assert not {d["task_id"] for d in json.loads(res.stdout)["disagreements"]} & subverted

"""The privilege attacks (tests/verify/attacks/privilege/): hostile agents whose code under test acts with the
verifier's own privileges, each the oracle's solve.sh on a copy of examples/tasks/plain-bugfix with the fix absent.
Every one must end graded and not resolved, in every task shape it is aimed at, with the tag it should carry; the
honest fix must resolve in every shape (docs/threat-model.md: the guarantees these name).

The shapes: graded per test (`pertest`), graded by its reward file (`rewardfile`), Harbor's one-line
`pytest ...; rc=$?` (`harbor`), a test command naming a folder (`folder`, graded per test: no canary can be planted),
a test.sh that runs git after writing its reward (`gitafter`), and `isolation = "container"` (`container`); and
SWE-bench's shape, its eval script (`swebench`, graded per test; `swebenchreward`, by the reward file root's python
writes after the tests): a virtualenv whose image installed the repository editable, a test.sh that re-installs it
(`pip install -e .`, its setup.py importing the package, as Django's, astropy's and matplotlib's do) before it applies
the hidden test patch from a heredoc and runs the tests.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
ATTACKS = Path(__file__).resolve().parent / "attacks" / "privilege"
REWARD_LINE = 'if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi'
HARBOR_SH = f"""#!/bin/bash
cd /testbed
mkdir -p tests && cp /tests/test_*.py tests/
python3 -m pytest -rA -p no:cacheprovider tests/test_stats.py; rc=$?
mkdir -p /logs/verifier
{REWARD_LINE}
"""
# SWE-bench's shape: pip and setuptools from local wheels (no network here), the repository installed editable
# (downloaded from the index pip is configured with, once, into a cache folder: the machine running the tests reaches
# PyPI, the sandboxes do not)
WHEELS = Path(tempfile.gettempdir()) / "trialbook-test-wheels"
WHEEL_NAMES = ("pip-*-py3-none-any.whl", "setuptools-*-py3-none-any.whl")
SWEBENCH_DOCKERFILE = """FROM trialbook-base:bookworm
COPY wheels/ /tmp/wheels/
RUN python3 -m venv --system-site-packages --without-pip /opt/venv \\
    && pip=$(echo /tmp/wheels/pip-*.whl) && /opt/venv/bin/python "$pip/pip" install -q --no-index /tmp/wheels/*.whl \\
    && rm -rf /tmp/wheels
COPY repo/ /testbed/
WORKDIR /testbed
RUN git init -q && git add -A \\
    && git -c user.name=trialbook -c user.email=tb@example.invalid commit -qm "initial import" \\
    && /opt/venv/bin/python -m pip install -q --no-build-isolation --no-deps --no-index -e .
"""
SETUP_PY = """from setuptools import setup

import stats  # its version, as Django's, astropy's and matplotlib's setup.py read theirs

setup(name="stats", version=getattr(stats, "__version__", "0.1"), py_modules=["stats"])
"""
SWEBENCH_SH = """#!/bin/bash
set -uxo pipefail
source /opt/venv/bin/activate
cd /testbed
git status
git diff HEAD
python -m pip install --no-build-isolation --no-deps --no-index -e .
git apply -v - <<'EOF_114329324912'
%s
EOF_114329324912
: '>>>>> Start Test Output'
python -m pytest -rA -p no:cacheprovider tests/test_stats.py
rc=$?
: '>>>>> End Test Output'
mkdir -p /logs/verifier
python -c 'import sys; open("/logs/verifier/reward.txt", "w").write("1" if sys.argv[1] == "0" else "0")' "$rc"
"""
GIT_AFTER = "\ngit status --short > /dev/null 2>&1\ngit checkout -q HEAD 2>/dev/null || true\n"
# shape -> (graded per test, isolation)
SHAPES = {
    "pertest": (True, "diff"), "rewardfile": (False, "diff"), "harbor": (False, "diff"), "folder": (True, "diff"),
    "gitafter": (False, "diff"), "container": (True, "container"), "swebench": (True, "diff"),
    "swebenchreward": (False, "diff"),
}  # fmt: skip
SWEBENCH = ("swebench", "swebenchreward")
# attack -> the shapes it is aimed at
AIMED = {
    "prlimit_nofile": ("rewardfile", "harbor", "container"),
    "prlimit_fsize": ("harbor",),
    "proc_mem_rewrite": ("rewardfile", "harbor"),
    "ptrace_parent": ("rewardfile", "pertest"),
    "sigstop_all": ("rewardfile", "pertest", "container"),
    "fsmonitor_config": ("gitafter",),
    "git_hook": ("gitafter",),
    "atexit_exit0": ("rewardfile", "harbor", "folder"),
    "daemon_outlives": ("rewardfile", "container"),
    "disk_fill_agent": ("pertest",),
    "disk_fill_tests": ("pertest", "rewardfile"),
    "read_tests_lists": ("pertest", "folder"),
    # the install step of SWE-bench's shape runs the working tree's code (its setup.py imports the package)
    "install_reads_lists": ("swebench",),
    "install_reads_test_sh": SWEBENCH,
    "install_replaces_setpriv": SWEBENCH,
    "install_replaces_python": SWEBENCH,
    "install_daemon": SWEBENCH,
    "install_writes_reward": ("swebenchreward",),
}
# the tag each attack must carry (in every shape it is tried in); None: it fails without a trace but its loss
REWARD_WRITERS = {"prlimit_nofile", "prlimit_fsize", "ptrace_parent", "sigstop_all", "install_writes_reward"}
TAG = {
    **{name: "reward_written_by_tests" for name in REWARD_WRITERS},
    "atexit_exit0": "exit_status_contradicts_log",
    "daemon_outlives": "test_processes_outlived",
    "install_daemon": "test_processes_outlived",
    "disk_fill_tests": "disk_quota_in_tests",
}
DISK_MB = 256  # the copies' disk quota: 1 GiB written by the agent or the tests is past it


def _copy(tasks: Path, shape: str, name: str, solve: str | None) -> None:
    task = tasks / f"{shape}-{name}"
    shutil.copytree(EXAMPLE, task)
    if solve is not None:
        (task / "solution" / "solve.sh").write_text(solve)
    tests = task / "tests"
    per_test, isolation = SHAPES[shape]
    if not per_test:
        (tests / "config.json").unlink()
    if shape == "harbor":
        (tests / "test.sh").write_text(HARBOR_SH)
    elif shape == "folder":
        text = (tests / "test.sh").read_text()
        (tests / "test.sh").write_text(text.replace("tests/test_stats.py", "tests/"))
    elif shape == "gitafter":
        (tests / "test.sh").write_text((tests / "test.sh").read_text().rstrip("\n") + GIT_AFTER)
    elif shape in SWEBENCH:
        _swebench(task)
    toml = (task / "task.toml").read_text()
    timeout = 90 if shape in SWEBENCH else 20  # a re-install (seconds on a loaded machine), and a witness run beside
    verifier = f'[verifier]\ntimeout_sec = {timeout}\nisolation = "{isolation}"'
    toml = toml.replace("[verifier]\ntimeout_sec = 60", verifier)
    (task / "task.toml").write_text(toml + f"disk_mb = {DISK_MB}\n")


def _wheels() -> list[Path]:
    found = [w for name in WHEEL_NAMES for w in sorted(WHEELS.glob(name))[-1:]]
    if len(found) < len(WHEEL_NAMES):
        WHEELS.mkdir(exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", str(WHEELS),
             "pip", "setuptools"],
            check=True, timeout=600,
        )  # fmt: skip
        found = [w for name in WHEEL_NAMES for w in sorted(WHEELS.glob(name))[-1:]]
    return found


def _swebench(task: Path) -> None:
    """SWE-bench's shape on the copy `task`: the image and the eval script (module docstring)."""
    env = task / "environment"
    (env / "Dockerfile").write_text(SWEBENCH_DOCKERFILE)
    (env / "wheels").mkdir()
    for wheel in _wheels():
        shutil.copy(wheel, env / "wheels" / wheel.name)
    (env / "repo" / "setup.py").write_text(SETUP_PY)
    lines = (task / "tests" / "test_stats.py").read_text().splitlines()
    patch = "\n".join([
        "diff --git a/tests/test_stats.py b/tests/test_stats.py", "new file mode 100644", "--- /dev/null",
        "+++ b/tests/test_stats.py", f"@@ -0,0 +1,{len(lines)} @@", *(f"+{line}" for line in lines),
    ])  # fmt: skip
    (task / "tests" / "test.sh").write_text(SWEBENCH_SH % patch)


@pytest.fixture(scope="module")
def attack_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("privilege")
    tasks = base / "tasks"
    tasks.mkdir()
    for shape in SHAPES:
        _copy(tasks, shape, "honest", None)
    for name, shapes in AIMED.items():
        for shape in shapes:
            _copy(tasks, shape, name, (ATTACKS / f"{name}.sh").read_text())
    return base, tasks


def test_every_privilege_attack_loses_in_every_shape_and_the_fix_resolves(attack_run, cli, db, engine):
    assert sorted(p.stem for p in ATTACKS.glob("*.sh")) == sorted(AIMED)
    assert len(_wheels()) == len(WHEEL_NAMES), f"SWE-bench's shape needs pip's and setuptools' wheels in {WHEELS}"
    base, tasks = attack_run
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "w40b-privilege", "--concurrency", "2",
              "--runs-dir", str(base / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    got = {t["task_id"]: t for t in trial_dicts(Ledger(db), "w40b-privilege")}
    assert len(got) == len(SHAPES) + sum(len(s) for s in AIMED.values())
    wrong = {task: problem for task, t in sorted(got.items()) if (problem := _problem(task, t))}
    assert wrong == {}


def _problem(task: str, t: dict) -> str | None:
    """What is wrong with the trial `task` (None: nothing)."""
    shape, _, name = task.partition("-")
    tags = t["extra"].get("tags", [])
    why = f"{t['outcome']} {t['reward']} {t['exception']} {t['exception_message']} {tags}"
    # every test command ran as its own uid, no capabilities, no new privileges (setpriv is in the image)
    if t["extra"].get("tests_user") != "setpriv" or "tests_not_separated" in tags:
        return f"not separated: {t['extra'].get('tests_user')} {why}"
    if name == "honest":
        bad = {"reward_written_by_tests", "exit_status_contradicts_log", "disk_quota_in_tests"} & set(tags)
        return None if t["outcome"] == "resolved" and not bad else why
    if name == "disk_fill_agent":  # charged to the agent, and graded
        return None if (t["outcome"], t["exception"], t["reward"]) == ("disk_quota", "DiskQuotaError", 0.0) else why
    if (t["outcome"], t["reward"]) != ("unresolved", 0.0):
        return why
    if TAG.get(name) and TAG[name] not in tags:
        return f"no tag {TAG[name]}: {why}"
    if name in REWARD_WRITERS and t["extra"].get("rewards_by_tests") != ["reward.txt"]:
        return f"rewards_by_tests {t['extra'].get('rewards_by_tests')}: {why}"  # test.sh's own 0 was read
    return None

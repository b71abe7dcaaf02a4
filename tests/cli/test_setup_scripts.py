"""scripts/setup.sh and scripts/test.sh stop with one line naming what is missing: an old Python, no
apt-get, no root or sudo. Run for real with the piece hidden (a PATH without it, an unprivileged user)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from paths import SHARED

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ("setup.sh", "test.sh")
# What the scripts call before they reach apt-get; everything else (apt-get, sudo, dockerd...) stays hidden.
TOOLS = ("bash", "python3", "id", "date", "dirname", "cat", "sha256sum", "cut", "ls", "mkdir", "tail", "env")


def bare_path(repo: Path, *extra: str) -> str:
    """A PATH holding only TOOLS (+ extra): on it dockerd, debootstrap, pg_ctl are missing, so the scripts
    want to install them."""
    bindir = repo.parent / "bin"
    bindir.mkdir(mode=0o755)
    for tool in (*TOOLS, *extra):
        found = shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin")
        assert found, f"{tool} is not on this machine"
        (bindir / tool).symlink_to(found)
    return str(bindir)


@pytest.fixture
def repo():
    """The scripts in a copy of the repository that the user nobody can read (pytest's tmp_path is
    private to root): should a guard let a script through, it builds its venv there and fails at
    `pip install`, never touching the real checkout."""
    with tempfile.TemporaryDirectory(prefix="tb-setup-test-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(ROOT / "scripts", copy / "scripts")
        shutil.copy(ROOT / "pyproject.toml", copy)
        for p in (Path(tmp), copy):
            p.chmod(0o755)
        yield copy


def run(script: str, path: str, cwd: Path, user: int | None = None, python: str | None = None, **extra_env: str):
    env = {"PATH": path, "HOME": "/tmp", "LANG": "C.UTF-8", "TRIALBOOK_SHARED": str(SHARED), **extra_env}
    if python:
        env["PYTHON"] = python
    argv = ["bash", str(cwd / "scripts" / script)]
    if user is not None:
        argv = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def old_python() -> str:
    """A real Python older than 3.11 (pyenv's or the system's) when this machine has one."""
    candidates = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.[0-9].*/bin/python3")))
    candidates += [p for v in ("3.10", "3.9", "3.8") if (p := shutil.which(f"python{v}"))]
    for candidate in candidates:
        probe = subprocess.run([candidate, "-c", "import sys; print(sys.version_info < (3, 11))"],
                               capture_output=True, text=True)  # fmt: skip
        if probe.stdout.strip() == "True":
            return candidate
    pytest.fail("no Python < 3.11 on this machine to check the version guard with (pyenv install 3.9)")


@pytest.mark.parametrize("script", SCRIPTS)
def test_old_python_is_named_in_one_line(script, repo):
    python = old_python()
    res = run(script, os.environ["PATH"], repo, python=python)
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert res.stderr.startswith(f"{script[:-3]}: error: Python >= 3.11 needed, '{python}' is 3.")


@pytest.mark.parametrize("script", SCRIPTS)
def test_missing_python_is_named_in_one_line(script, repo):
    res = run(script, os.environ["PATH"], repo, python="python3.99")
    assert res.returncode == 1
    hint = "(install python3 >= 3.11, or set PYTHON=/path/to/python3.11+)"
    assert res.stderr == f"{script[:-3]}: error: no Python: 'python3.99' not found {hint}\n"


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_apt_get_names_the_packages_it_needed(script, repo):
    res = run(script, bare_path(repo), repo)
    assert res.returncode == 1
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"{script[:-3]}: error: apt-get not found: this script supports Debian/Ubuntu; install ")
    assert "docker.io" in line and "debootstrap" in line
    if script == "test.sh":
        assert "git" in line and "g++" in line  # (postgresql is found by its files, installed here)
    # before failing it said what it wanted and why
    assert "needs docker.io (apt): Docker Engine: every trial runs in its own sandbox container" in res.stdout


@pytest.mark.parametrize("script", SCRIPTS)
def test_no_root_and_no_sudo_is_named_in_one_line(script, repo):
    """As an unprivileged user (nobody) on a PATH with apt-get but without sudo."""
    if os.geteuid() != 0:
        pytest.fail("this test switches to the user nobody: run it as root (CI does)")
    path = bare_path(repo, "apt-get")
    res = run(script, path, repo, user=65534)
    assert res.returncode == 1
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"{script[:-3]}: error: root or sudo needed to install ")
    assert "docker.io" in line and line.endswith("with apt-get (run as root or from a sudoer)")


def test_scripts_are_shellcheck_clean():
    scripts = [str(ROOT / "scripts" / name) for name in (*SCRIPTS, "setup-lib.sh")] + [str(ROOT / ".ci" / "run")]
    res = subprocess.run(["shellcheck", "-x", *scripts], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout


def test_test_sh_names_missing_test_data(repo):
    """The suite also reads the larger shared data sets: without them test.sh stops before installing."""
    res = run("test.sh", os.environ["PATH"], repo, TRIALBOOK_SHARED=str(repo / "no-such-shared"))
    assert res.returncode == 1
    assert res.stderr == (
        f"test: error: no test data at {repo}/no-such-shared/data: put the shared/ folder next to the "
        "repository or set TRIALBOOK_SHARED=/path/to/shared\n"
    )
    assert not (repo / ".venv").exists()

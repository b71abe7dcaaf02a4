"""`tasks from-swebench`: generated verifiers are valid shell, follow the official eval script, and
grade the real logs exactly as the official harness did (the images themselves cannot be pulled here)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from paths import INSTANCES, SWE
from trialbook.tasks import load_task
from trialbook.tasks.swebench.generate import PROXY_VARS

LOGS = SWE / "logs" / "20240620_sweagent_claude3.5sonnet"
WITH_REPORT = sorted(p.parent.name for p in LOGS.glob("*/report.json"))
SPHINX = "sphinx-doc__sphinx-10323"
NO_LISTS = "django__django-14011"  # FAIL_TO_PASS/PASS_TO_PASS are null in the shared instances
SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")


def _instances() -> dict[str, dict]:
    with INSTANCES.open() as fh:
        return {o["instance_id"]: o for o in map(json.loads, fh)}


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, dict]:
    from typer.testing import CliRunner

    from trialbook.cli import app

    out = tmp_path_factory.mktemp("tasks")
    ids = ",".join([*WITH_REPORT, NO_LISTS])
    res = CliRunner().invoke(app, ["tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--ids", ids, "--json"])
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


def test_written_and_skipped_with_reason(generated):
    out, result = generated
    assert sorted(result["written"]) == WITH_REPORT
    assert result["skipped"] == [{"task_id": NO_LISTS, "reason": "no FAIL_TO_PASS/PASS_TO_PASS lists"}]
    assert not (out / NO_LISTS).exists()


def test_scripts_are_valid_bash_and_shellcheck_clean(generated):
    out, _ = generated
    scripts = sorted(str(p) for pattern in ("*/tests/test.sh", "*/solution/solve.sh") for p in out.glob(pattern))
    assert len(scripts) == 2 * len(WITH_REPORT)
    for script in scripts:
        subprocess.run(["bash", "-n", script], check=True)
    res = subprocess.run([SHELLCHECK, "--severity=info", *scripts], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[:3000]


def test_test_line_is_the_official_command_without_proxies(generated):
    out, _ = generated
    instances = _instances()
    unset = "env " + " ".join(f"-u {v}" for v in PROXY_VARS)
    for task_id in WITH_REPORT:
        script = (out / task_id / "tests" / "test.sh").read_text()
        lines = [line.strip() for line in script.splitlines()]
        # the official eval.sh's test command (shared data), now prefixed by env -u on that line only
        assert f"{unset} {instances[task_id]['test_cmd']}" in lines
        assert script.count("env -u") == 1 and "unset " not in script
        start = lines.index(": '>>>>> Start Test Output'")
        assert lines[start + 1].startswith(unset)
        assert lines[start + 2] == ": '>>>>> End Test Output'"


def test_task_declares_the_official_image_and_the_testbed_env(generated):
    out, _ = generated
    spec = load_task(out / SPHINX)  # the harness's own task loader
    assert spec.image == "swebench/sweb.eval.x86_64.sphinx-doc_1776_sphinx-10323:latest"
    official = _instances()[SPHINX]
    assert spec.fail_to_pass == official["FAIL_TO_PASS"] and spec.pass_to_pass == official["PASS_TO_PASS"]
    toml = tomllib.loads((out / SPHINX / "task.toml").read_text())
    env = toml["environment"]
    assert "conda activate testbed" in env["shell_setup"]
    assert env["env"]["PATH"].startswith("/opt/miniconda3/envs/testbed/bin:")
    assert toml["metadata"]["version"] == "5.0"


def _reapply_block(script: str) -> str:
    lines = script.splitlines()
    start = next(i for i, line in enumerate(lines) if "re-apply pre_install" in line)
    end = next(i for i in range(start, len(lines)) if lines[i].strip() == "fi")
    return "\n".join(lines[start : end + 1])


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def test_sphinx_tox_ini_edit_is_reapplied_only_when_reverted(generated, tmp_path: Path):
    out, _ = generated
    script = (out / SPHINX / "tests" / "test.sh").read_text()
    block = _reapply_block(script)
    assert "sed -i 's/pytest/pytest -rA/' tox.ini" in block
    # it runs after the verify-time install and before the test files are reset
    assert script.index(block) < script.index("git checkout 31eba1a76dd485dc633cae48227b46879eda5df4 tests/")
    repo = tmp_path / "testbed"
    repo.mkdir()
    (repo / "tox.ini").write_text("[testenv]\ncommands=\n    python -X dev -m pytest --durations 25 {posargs}\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "tox.ini")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "base")
    subprocess.run(["bash", "-c", "sed -i 's/pytest/pytest -rA/' tox.ini"], cwd=repo, check=True)  # the image
    edited = (repo / "tox.ini").read_text()
    subprocess.run(["bash", "-c", block], cwd=repo, check=True)
    assert (repo / "tox.ini").read_text() == edited  # still dirty: not applied twice
    _git(repo, "checkout", "--", "tox.ini")  # what an agent's `git checkout .` does
    assert "-rA" not in (repo / "tox.ini").read_text()
    subprocess.run(["bash", "-c", block], cwd=repo, check=True)
    assert (repo / "tox.ini").read_text() == edited


@pytest.mark.parametrize("task_id", WITH_REPORT)
def test_in_container_grader_matches_the_official_report(generated, task_id: str, tmp_path: Path):
    out, _ = generated
    # -I -S: no site-packages, so the grader cannot lean on swebench or trialbook
    subprocess.run(
        [sys.executable, "-I", "-S", str(out / task_id / "tests" / "grade.py"),
         str(LOGS / task_id / "test_output.txt"), str(out / task_id / "tests" / "config.json"), str(tmp_path)],
        check=True,
    )  # fmt: skip
    report = json.loads((LOGS / task_id / "report.json").read_text())[task_id]
    assert (tmp_path / "reward.txt").read_text().strip() == ("1" if report["resolved"] else "0")
    grade = json.loads((tmp_path / "grade.json").read_text())
    passed = {t for t, s in grade["tests"]["PASS_TO_PASS"].items() if s == "pass"}
    assert passed == set(report["tests_status"]["PASS_TO_PASS"]["success"])


def test_instance_without_version_uses_its_own_test_command(tmp_path: Path, cli):
    inst = {
        "instance_id": "pallets__flask-99999",
        "repo": "pallets/flask",
        "base_commit": "a" * 40,
        "version": None,
        "problem_statement": "fix it",
        "patch": "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n@@ -1 +1 @@\n-a\n+b\n",
        "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n"
        "@@ -1 +1 @@\n-x = 1\n+x = 2\n",
        "test_cmd": "pytest -rA tests/test_x.py",
        "FAIL_TO_PASS": '["tests/test_x.py::test_fix"]',
        "PASS_TO_PASS": "[]",
    }
    src = tmp_path / "instances.jsonl"
    src.write_text(json.dumps(inst) + "\n")
    res = cli("tasks", "from-swebench", str(src), "--out", str(tmp_path / "out"), "--json", use_db=False)
    assert res.exit_code == 0, res.stderr
    script = (tmp_path / "out" / "pallets__flask-99999" / "tests" / "test.sh").read_text()
    assert "pytest -rA tests/test_x.py" in script
    assert f"git checkout {'a' * 40} tests/test_x.py" in script
    subprocess.run(["bash", "-n", str(tmp_path / "out" / "pallets__flask-99999" / "tests" / "test.sh")], check=True)


def test_bad_input_is_a_user_error(tmp_path: Path, cli):
    res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(tmp_path), "--ids", "nope__nope-1", use_db=False)
    assert res.exit_code == 2 and "nope__nope-1" in res.stderr
    res = cli("tasks", "from-swebench", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path), use_db=False)
    assert res.exit_code == 2


def test_every_verified_instance_gets_its_official_test_command(tmp_path: Path):
    """All 500: written unless F2P/P2P are missing, and each test line is the official eval.sh's."""
    from trialbook.tasks.swebench.generate import write_tasks

    result = write_tasks(INSTANCES, tmp_path)
    instances = _instances()
    lacking = {i for i, o in instances.items() if o["FAIL_TO_PASS"] is None or o["PASS_TO_PASS"] is None}
    assert {s.task_id for s in result.skipped} == lacking
    assert len(result.written) == 500 - len(lacking)
    unset = "env " + " ".join(f"-u {v}" for v in PROXY_VARS)
    for task_id in result.written:
        lines = [line.strip() for line in (tmp_path / task_id / "tests" / "test.sh").read_text().splitlines()]
        assert f"{unset} {instances[task_id]['test_cmd']}" in lines, task_id

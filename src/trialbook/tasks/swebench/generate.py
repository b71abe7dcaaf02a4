"""`tasks from-swebench`: task folders for SWE-bench Verified instances on the official images.

The verifier follows swebench 4.1.0's own eval script (`make_eval_script_list_py` with the
instance's `MAP_REPO_VERSION_TO_SPECS` entry): reset the test files, apply the test patch, run the
repo's test command, reset again. trialbook adds three things, each closing a way that script misgrades:
- the repo's `pre_install` file edits are re-applied when the file is clean (an agent's `git
  checkout` reverts the image's uncommitted sphinx tox.ini `-rA` edit: no per-test lines);
- proxy variables are removed on the test line only (`env -u`), not for the whole verifier;
- the log is graded in the container by `tests/grade.py`, which carries swebench's parser for the
  repo (its source, taken from the installed package) and the official pass/fail rule.
The agent's shell must run inside the image's `testbed` conda environment: task.toml declares it
(`[environment] workdir/shell_setup` and `[environment.env]`).
"""

from __future__ import annotations

import inspect
import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swebench.harness.constants import (
    APPLY_PATCH_FAIL,
    END_TEST_OUTPUT,
    MAP_REPO_VERSION_TO_SPECS,
    RESET_FAILED,
    START_TEST_OUTPUT,
    TESTS_ERROR,
    TESTS_TIMEOUT,
    TestStatus,
)
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
from swebench.harness.test_spec.python import get_test_directives, make_eval_script_list_py
from swebench.harness.utils import get_modified_files

from trialbook.errors import UserError
from trialbook.files import json_lines
from trialbook.result_types import Result
from trialbook.tasks.swebench.versions import VERSIONS

REPO_DIR = "/testbed"
ENV_NAME = "testbed"
CONDA = "/opt/miniconda3"
SHELL_SETUP = f"source {CONDA}/bin/activate && conda activate {ENV_NAME} && cd {REPO_DIR}"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
AGENT_ENV = {
    "CONDA_DEFAULT_ENV": ENV_NAME,
    "CONDA_PREFIX": f"{CONDA}/envs/{ENV_NAME}",
    "PATH": f"{CONDA}/envs/{ENV_NAME}/bin:{CONDA}/condabin:{CONDA}/bin:" + SYSTEM_PATH,
}
PROXY_VARS = (
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
    "no_proxy",
    "NO_PROXY",
)
VERIFIER_TIMEOUT = 1800.0  # the official harness's default per-instance timeout
AGENT_TIMEOUT = 3000.0


OFFICIAL_NAMESPACE = "swebench"


def image_for(instance_id: str, registry: str | None = None) -> str:
    """The official image name, as swebench 4.1.0's `TestSpec.instance_image_key` spells it for a remote
    image (lower-cased id, then every `__` of the whole key as `_1776_`), under `registry` when given."""
    key = f"{OFFICIAL_NAMESPACE}/sweb.eval.x86_64.{instance_id.lower()}:latest".replace("__", "_1776_")
    return f"{registry.rstrip('/')}/{key}" if registry else key


REGISTRY = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?(/[a-z0-9._-]+)*$")


def check_registry(registry: str | None, layout: str) -> None:
    """`--registry` names a registry host (optionally a port and a path) and goes with the official images."""
    if registry is None:
        return
    if layout != "official":
        raise UserError("--registry is used only with --image official")
    if not REGISTRY.match(registry):
        raise UserError(f"--registry must be HOST[:PORT][/PATH] (e.g. 127.0.0.1:5000), got {registry!r}")


def _as_list(value: Any) -> list[str] | None:
    if isinstance(value, str):
        value = json.loads(value)
    return None if value is None else [str(v) for v in value]


def read_instance_rows(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, obj in json_lines(path, prefix=f"{path}: "):
        if not isinstance(obj, dict) or not isinstance(obj.get("instance_id"), str):
            raise UserError(f"{path}: line {n}: not a SWE-bench instance (no instance_id)")
        rows.append(obj)
    if not rows:
        raise UserError(f"no instances in {path}")
    return rows


# ---- the verifier -----------------------------------------------------------------------------
_EDIT_SEGMENT = re.compile(r"\s*(?:&&|\|\|)\s*")


def file_edit_target(command: str) -> str | None:
    """The file a `sed -i` pre_install edit changes (grep guards allowed); None for anything else."""
    segments = [shlex.split(s) for s in _EDIT_SEGMENT.split(command) if s.strip()]
    if not segments or not any(s[0] == "sed" and "-i" in s for s in segments):
        return None
    if not all(s and s[0] in ("sed", "grep") for s in segments):
        return None
    targets = {s[-1] for s in segments}
    return targets.pop() if len(targets) == 1 else None


def reapply_block(pre_install: list[str]) -> list[str]:
    """Re-apply the image's uncommitted file edits when the agent reverted them (file clean again)."""
    by_file: dict[str, list[str]] = {}
    for cmd in pre_install:
        target = file_edit_target(cmd)
        if target is not None:
            by_file.setdefault(target, []).append(cmd)
    lines = []
    for target, cmds in by_file.items():
        quoted = shlex.quote(target)
        lines.append(f"if [ -f {quoted} ] && git diff --quiet -- {quoted}; then  # reverted: re-apply pre_install")
        lines += [f"  {c}" for c in cmds]
        lines.append("fi")
    return lines


def _official_commands(inst: dict[str, Any], version: str | None) -> tuple[list[str], str, list[str]]:
    """swebench's eval commands, the test line in them, and the version's pre_install edits."""
    test_patch = inst["test_patch"]
    if version is not None and version in MAP_REPO_VERSION_TO_SPECS.get(inst["repo"], {}):
        specs = MAP_REPO_VERSION_TO_SPECS[inst["repo"]][version]
        instance = {**inst, "version": version}
        cmds = make_eval_script_list_py(instance, specs, ENV_NAME, REPO_DIR, inst["base_commit"], test_patch)
        test_line = " ".join([specs["test_cmd"], *get_test_directives(instance)])
        return cmds, test_line, list(specs.get("pre_install", []))
    # No known version: the instance's own test command in the same script shape.
    reset = f"git checkout {inst['base_commit']} {' '.join(get_modified_files(test_patch))}"
    test_line = inst["test_cmd"]
    cmds = [
        f"source {CONDA}/bin/activate",
        f"conda activate {ENV_NAME}",
        f"cd {REPO_DIR}",
        f"git config --global --add safe.directory {REPO_DIR}",
        reset,
        f"git apply -v - <<'EOF_114329324912'\n{test_patch}\nEOF_114329324912",
        f": '{START_TEST_OUTPUT}'",
        test_line,
        f": '{END_TEST_OUTPUT}'",
        reset,
    ]
    return cmds, test_line, []


VENV = "/opt/venv"
# A local httpbin (images built with `--build` for test files that read HTTPBIN_URL): test.sh starts it
# inside the verifier's container, which keeps --network none; only the test line gets HTTPBIN_URL.
HTTPBIN_VENV = "/opt/httpbin"
HTTPBIN_PORT = 8765
HTTPBIN_URL = f"http://127.0.0.1:{HTTPBIN_PORT}/"
VENV_NOTE = " in a virtualenv"
OFFLINE_PIP = "python -m pip install --no-build-isolation --no-deps --no-index"


def venv_commands(cmds: list[str]) -> list[str]:
    """The eval script for an image built by `--build`: a virtualenv instead of conda, and the
    re-install at eval time offline (the sandbox has no network; dependencies are in the image)."""
    out = []
    for c in cmds:
        if c == f"source {CONDA}/bin/activate":
            c = f"source {VENV}/bin/activate"
        elif c == f"conda activate {ENV_NAME}":
            continue
        elif c.startswith("python -m pip install "):
            c = OFFLINE_PIP + c[len("python -m pip install") :]
        out.append(c)
    return out


def httpbin_start() -> list[str]:
    """Start the image's httpbin on 127.0.0.1 and wait (up to 2 min) until it accepts connections."""
    return [
        f"{HTTPBIN_VENV}/bin/python -m httpbin.core --host 127.0.0.1 --port {HTTPBIN_PORT}"
        " > /logs/verifier/httpbin.log 2>&1 &",
        "HTTPBIN_PID=$!",
        f"for _ in $(seq 240); do (exec 3<>/dev/tcp/127.0.0.1/{HTTPBIN_PORT}) 2>/dev/null && break; sleep 0.5; done",
    ]


def build_test_sh(inst: dict[str, Any], version: str | None, venv: bool = False, httpbin: bool = False) -> str:
    cmds, test_line, pre_install = _official_commands(inst, version)
    if venv:
        cmds = venv_commands(cmds)
    start = cmds.index(f": '{START_TEST_OUTPUT}'")
    if cmds[start + 1] != test_line:
        raise ValueError("unexpected swebench eval script layout")
    unset = " ".join(f"-u {v}" for v in PROXY_VARS)
    cmds[start + 1] = f"env {unset} {f'HTTPBIN_URL={HTTPBIN_URL} ' if httpbin else ''}{test_line}"
    if httpbin:
        cmds[start + 3 : start + 3] = ['kill "$HTTPBIN_PID"']  # after the end marker
        cmds[start:start] = httpbin_start()
    first_reset = next(i for i, c in enumerate(cmds) if c.startswith(f"git checkout {inst['base_commit']}"))
    cmds[first_reset:first_reset] = reapply_block(pre_install)
    cmds = [f"{c} || exit 1" if c.startswith("cd ") and "\n" not in c else c for c in cmds]
    body = "\n".join(c if "\n" in c else "  " + c for c in cmds)  # heredocs stay at column 0
    return "\n".join(
        [
            "#!/bin/bash",
            f"# Verifier for {inst['instance_id']}: swebench 4.1.0's eval script"
            f" (version {version or 'unknown: instance test_cmd'}){VENV_NOTE if venv else ''}, plus trialbook's",
            "# pre_install re-application, proxy removal on the test line only, and in-container grading.",
            "# Commands from swebench are kept verbatim: conda's activate exists only in the image (SC1091),",
            "# pip extras like .[test] (SC2102) and pre_install's `grep -q && sed || sed` (SC2015).",
            "# shellcheck disable=SC1091,SC2015,SC2102",
            "set -uxo pipefail",
            "mkdir -p /logs/verifier",
            "{",
            body,
            "} 2>&1 | tee /logs/verifier/test_output.txt",
            f"PY={VENV if venv else CONDA}/bin/python",
            '[ -x "$PY" ] || PY=python3',
            '"$PY" /tests/grade.py /logs/verifier/test_output.txt /tests/config.json /logs/verifier',
            "",
        ]
    )


# ---- the in-container grader -----------------------------------------------------------------
_GRADE_MAIN = """
BAD_MARKERS = {bad!r}
START, END = {start!r}, {end!r}


def statuses(log):
    if any(m in log for m in BAD_MARKERS):
        return {{}}
    if START in log and END in log:
        return PARSER(log.split(START)[1].split(END)[0], None) or PARSER(log, None)
    return PARSER(log, None)


def main(log_path, config_path, out_dir):
    with open(log_path, errors="replace") as fh:
        status_map = statuses(fh.read())
    with open(config_path) as fh:
        config = json.load(fh)
    tests, failed = {{}}, False
    for group in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        tests[group] = {{}}
        for test in config[group]:
            s = status_map.get(test)
            if s in ("PASSED", "XFAIL"):
                tests[group][test] = "pass"
            elif s is None or s in ("FAILED", "ERROR"):
                tests[group][test] = "missing" if s is None else s.lower().replace("failed", "fail")
                failed = True
            else:  # SKIPPED counts neither way, as in the official harness
                tests[group][test] = "skipped"
    with open(os.path.join(out_dir, "grade.json"), "w") as fh:
        json.dump({{"resolved": not failed, "parsed": len(status_map), "tests": tests}}, fh, indent=1)
    with open(os.path.join(out_dir, "reward.txt"), "w") as fh:
        fh.write("0\\n" if failed else "1\\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])
"""


def build_grade_py(repo: str) -> str:
    parser = MAP_REPO_TO_PARSER[repo]
    return "\n".join(
        [
            f'"""Grades a {repo} test log: swebench 4.1.0\'s parser (source below, from the installed',
            'package) and the official rule: every F2P and P2P test PASSED/XFAIL; missing counts as failed."""',
            "from __future__ import annotations",
            "",
            "import json",
            "import os",
            "import re",
            "import sys",
            "from enum import Enum",
            "",
            "",
            inspect.getsource(TestStatus),
            "",
            inspect.getsource(parser),
            f"PARSER = {parser.__name__}",
            _GRADE_MAIN.format(
                bad=[APPLY_PATCH_FAIL, RESET_FAILED, TESTS_ERROR, TESTS_TIMEOUT],
                start=START_TEST_OUTPUT,
                end=END_TEST_OUTPUT,
            ),
        ]
    )


# ---- the folder ------------------------------------------------------------------------------
def _toml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _env_lines(
    instance_id: str, built_image: str | None, official_image: str | None = None, unroutable: bool = False
) -> list[str]:
    # its test files connect to build_plan.TARPIT and expect the connect to time out, as the internet makes it
    network = ["# its tests expect a connect to 10.255.255.1 to time out", "unroutable_network = true"]
    network = network if unroutable else []
    if built_image is not None:  # the image's ENV already puts /opt/venv first on PATH
        return [
            f"docker_image = {_toml_str(built_image)}",
            f"workdir = {_toml_str(REPO_DIR)}",
            "cpus = 2",
            "memory_mb = 4096",
            *network,
            "",
        ]
    return [
        f"docker_image = {_toml_str(official_image or image_for(instance_id))}",
        f"workdir = {_toml_str(REPO_DIR)}",
        f"shell_setup = {_toml_str(SHELL_SETUP)}",
        "cpus = 2",
        "memory_mb = 4096",
        *network,
        "",
        "[environment.env]",
        *[f"{k} = {_toml_str(v)}" for k, v in AGENT_ENV.items()],
        "",
    ]


def build_task_toml(
    inst: dict[str, Any],
    version: str | None,
    built_image: str | None = None,
    official_image: str | None = None,
    metadata: dict[str, str] | None = None,
    unroutable: bool = False,
) -> str:
    head = (
        [
            "# SWE-bench Verified instance on an image built here from source (`tasks from-swebench --build`).",
            "# The repo's Python is the virtualenv /opt/venv, first on the image's PATH.",
        ]
        if built_image
        else [
            "# SWE-bench Verified instance on its official image (written by `trialbook tasks from-swebench`).",
            "# The agent's shell must start in the image's `testbed` conda env (the repo's Python lives there).",
        ]
    )
    lines = [
        *head,
        "[metadata]",
        f"repo = {_toml_str(inst['repo'])}",
        f"instance_id = {_toml_str(inst['instance_id'])}",
        f"base_commit = {_toml_str(inst['base_commit'])}",
        f"version = {_toml_str(version or '')}",
        'source = "swebench-verified"',
        *[f"{k} = {_toml_str(v)}" for k, v in (metadata or {}).items()],
        "",
        "[agent]",
        f"timeout_sec = {AGENT_TIMEOUT}",
        "",
        "[verifier]",
        f"timeout_sec = {VERIFIER_TIMEOUT}",
        "",
        "[environment]",
        *_env_lines(inst["instance_id"], built_image, official_image, unroutable),
    ]
    return "\n".join(lines)


def build_solve_sh(patch: str, what: str = "the instance's gold patch") -> str:
    """The oracle's solve.sh: `patch` applied to the repository (`what`: the comment's name for it)."""
    return "\n".join(
        [
            "#!/bin/bash",
            f"# Oracle: apply {what}.",
            "set -euo pipefail",
            f"cd {REPO_DIR}",
            "git apply -v - <<'EOF_GOLD_PATCH'",
            patch.rstrip("\n"),
            "EOF_GOLD_PATCH",
            "",
        ]
    )


def skip_reason(inst: dict[str, Any], version: str | None) -> str | None:
    if _as_list(inst.get("FAIL_TO_PASS")) is None or _as_list(inst.get("PASS_TO_PASS")) is None:
        return "no FAIL_TO_PASS/PASS_TO_PASS lists"
    if not inst.get("test_patch"):
        return "no test_patch"
    if not inst.get("base_commit"):
        return "no base_commit"
    if inst.get("repo") not in MAP_REPO_TO_PARSER:
        return f"no swebench log parser for repo {inst.get('repo')!r}"
    known = version is not None and version in MAP_REPO_VERSION_TO_SPECS.get(inst["repo"], {})
    if not known and not inst.get("test_cmd"):
        return "version unknown and no test_cmd"
    return None


def task_files(
    inst: dict[str, Any],
    version: str | None,
    built_image: str | None = None,
    httpbin: bool = False,
    official_image: str | None = None,
    metadata: dict[str, str] | None = None,
    unroutable: bool = False,
) -> dict[str, str]:
    """Every file of the task folder, by relative path (built before anything is written)."""
    config = {
        "instance_id": inst["instance_id"],
        "repo": inst["repo"],
        "version": version,
        "base_commit": inst["base_commit"],
        "FAIL_TO_PASS": _as_list(inst["FAIL_TO_PASS"]),
        "PASS_TO_PASS": _as_list(inst["PASS_TO_PASS"]),
    }
    return {
        "instruction.md": inst.get("problem_statement") or "",
        "task.toml": build_task_toml(inst, version, built_image, official_image, metadata, unroutable),
        "tests/config.json": json.dumps(config, indent=1) + "\n",
        "tests/grade.py": build_grade_py(inst["repo"]),
        "tests/test.sh": build_test_sh(inst, version, venv=built_image is not None, httpbin=httpbin),
        "solution/solve.sh": build_solve_sh(inst.get("patch") or ""),
    }


def write_task(
    inst: dict[str, Any],
    version: str | None,
    folder: Path,
    built_image: str | None = None,
    httpbin: bool = False,
    official_image: str | None = None,
    metadata: dict[str, str] | None = None,
    unroutable: bool = False,
) -> None:
    """`httpbin`: the image has a local httpbin (`--build`, test files that read HTTPBIN_URL). Without
    `built_image` the task is on the official image (`official_image`, default its Docker Hub name).
    `unroutable`: its sandboxes get the unroutable network (build_plan.connects_to_tarpit)."""
    files = task_files(inst, version, built_image, httpbin, official_image, metadata, unroutable)
    (folder / "environment").mkdir(parents=True, exist_ok=True)  # the image is prebuilt: no Dockerfile
    for rel, text in files.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if rel.endswith(".sh"):
            path.chmod(0o755)


@dataclass(frozen=True)
class Skipped(Result):
    task_id: str
    reason: str


@dataclass(frozen=True)
class TasksWritten(Result):
    out: str
    written: list[str]  # task ids
    skipped: list[Skipped]


def write_tasks(instances: Path, out: Path, ids: list[str] | None = None, registry: str | None = None) -> TasksWritten:
    """Task folders on the official images (`registry`: pulled from there instead of Docker Hub)."""
    rows = read_instance_rows(instances)
    if ids:
        known = {r["instance_id"] for r in rows}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise UserError(f"{len(unknown)} --task ids not in {instances} (first: {unknown[0]})")
        rows = [r for r in rows if r["instance_id"] in set(ids)]
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    skipped: list[Skipped] = []
    for inst in rows:
        version = inst.get("version") or VERSIONS.get(inst["instance_id"])
        reason = skip_reason(inst, version)
        if reason is not None:
            skipped.append(Skipped(inst["instance_id"], reason))
            continue
        try:
            image = image_for(inst["instance_id"], registry)
            write_task(inst, version, out / inst["instance_id"], official_image=image)
        except (ValueError, KeyError) as exc:  # an instance swebench's script builder cannot handle
            skipped.append(Skipped(inst["instance_id"], f"cannot build its verifier: {exc}"))
            continue
        written.append(inst["instance_id"])
    return TasksWritten(out=str(out), written=written, skipped=skipped)

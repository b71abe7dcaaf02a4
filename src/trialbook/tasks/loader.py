"""Load Harbor-compatible task folders (a task's id is its folder name).

A folder holds `instruction.md`, `task.toml`, `environment/` (optional `Dockerfile`),
`tests/test.sh` (+ optional `tests/config.json` with FAIL_TO_PASS / PASS_TO_PASS) and
`solution/solve.sh`. A broken folder becomes a `TaskError` for that task only.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from trialbook.errors import UserError
from trialbook.records import Task, repo_from_task_id

DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0


class TaskError(BaseModel):
    """A task folder that cannot be run, with the one-line reason."""

    task_id: str
    message: str


class _Section(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Agent(_Section):
    timeout_sec: float = Field(DEFAULT_AGENT_TIMEOUT, gt=0, allow_inf_nan=False)


class _Verifier(_Section):
    timeout_sec: float = Field(DEFAULT_VERIFIER_TIMEOUT, gt=0, allow_inf_nan=False)
    # "diff": only the change to the working tree reaches a fresh verifier container (verify/isolation.py);
    # "container": the agent's own container is graded, its processes killed and harness files restored
    isolation: Literal["diff", "container"] = "diff"


class _Environment(_Section):
    docker_image: str | None = None
    cpus: float = Field(1.0, gt=0, le=1024, allow_inf_nan=False)
    memory_mb: int = Field(2048, gt=0, le=1 << 30)
    pids_limit: int = Field(512, gt=0, le=1 << 22)
    # what a container may write (its own layer: the agent's, or the verifier's with the tests): past it, the agent
    # is stopped (outcome disk_quota, graded) or the tests graded 0 (sandbox/box.py: Sandbox.watch_disk)
    disk_mb: int = Field(10240, gt=0, le=1 << 30)
    allow_network: bool = False
    # how the agent's shell starts (SWE-bench images keep the repo's Python in a conda env)
    workdir: str | None = None
    shell_setup: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


class _TaskToml(_Section):
    agent: _Agent = Field(default_factory=_Agent)
    verifier: _Verifier = Field(default_factory=_Verifier)
    environment: _Environment = Field(default_factory=_Environment)
    metadata: dict[str, Any] = Field(default_factory=dict)


class TaskSpec(BaseModel):
    """Everything the harness needs to run one task."""

    task_id: str
    path: Path
    instruction: str
    agent_timeout: float
    verifier_timeout: float
    isolation: str = "diff"  # [verifier] isolation
    image: str | None  # a prebuilt image, else built from environment/Dockerfile
    cpus: float
    memory_mb: int
    pids_limit: int
    allow_network: bool
    disk_mb: int = 10240
    workdir: str | None = None
    shell_setup: str | None = None  # sourced by every `bash` in the sandbox (BASH_ENV), agents and verifier
    env: dict[str, str] = Field(default_factory=dict)
    fail_to_pass: list[str] | None = None
    pass_to_pass: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier_hash: str
    environment_hash: str

    @property
    def lists_tests(self) -> bool:
        """FAIL_TO_PASS / PASS_TO_PASS given: the verifier grades the test log per test (swebench's parsers)."""
        return self.fail_to_pass is not None or self.pass_to_pass is not None

    @property
    def tests_dir(self) -> Path:
        return self.path / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.path / "solution"

    @property
    def dockerfile(self) -> Path:
        return self.path / "environment" / "Dockerfile"

    @property
    def repo(self) -> str:
        return repo_from_task_id(self.task_id) or self.metadata.get("repo") or self.task_id

    def record(self) -> Task:
        solve = self.solution_dir / "solve.sh"
        return Task(
            task_id=self.task_id,
            repo=self.repo,
            instruction=self.instruction,
            image=self.image or f"(built from {self.dockerfile.relative_to(self.path)})",
            verifier_hash=self.verifier_hash,
            fail_to_pass=self.fail_to_pass,
            pass_to_pass=self.pass_to_pass,
            solution=solve.read_text() if solve.is_file() else None,
        )


def tree_hash(folder: Path) -> str:
    """sha256 over relative paths and contents: the identity of a verifier or environment."""
    h = hashlib.sha256()
    if folder.is_dir():
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(f.relative_to(folder).as_posix().encode() + b"\0")
            h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def _test_lists(tests: Path) -> tuple[list[str] | None, list[str] | None]:
    config = tests / "config.json"
    if not config.is_file():
        return None, None
    try:
        data = json.loads(config.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"tests/config.json is not valid JSON ({exc})") from None
    lists = []
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = data.get(key)
        if isinstance(value, str):  # SWE-bench stores them as JSON strings
            value = json.loads(value)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError(f"tests/config.json: {key} must be a list of test names")
        lists.append(value)
    return lists[0], lists[1]


def load_task(path: Path) -> TaskSpec:
    """Parse one task folder; raises ValueError with a one-line reason when it cannot run."""
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise ValueError("missing task.toml")
    try:
        parsed = _TaskToml.model_validate(tomllib.loads(toml_path.read_text()))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid task.toml: {exc}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid task.toml: {where}: {first['msg']}") from None
    if not (path / "tests" / "test.sh").is_file():
        raise ValueError("missing tests/test.sh")
    env = parsed.environment
    if env.docker_image is None and not (path / "environment" / "Dockerfile").is_file():
        raise ValueError("task.toml has no [environment] docker_image and there is no environment/Dockerfile")
    instruction = path / "instruction.md"
    f2p, p2p = _test_lists(path / "tests")
    return TaskSpec(
        task_id=path.name,
        path=path.resolve(),
        instruction=instruction.read_text() if instruction.is_file() else "",
        agent_timeout=parsed.agent.timeout_sec,
        verifier_timeout=parsed.verifier.timeout_sec,
        isolation=parsed.verifier.isolation,
        image=env.docker_image,
        cpus=env.cpus,
        memory_mb=env.memory_mb,
        pids_limit=env.pids_limit,
        disk_mb=env.disk_mb,
        allow_network=env.allow_network,
        workdir=env.workdir,
        shell_setup=env.shell_setup,
        env=env.env,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        metadata=parsed.metadata,
        verifier_hash=tree_hash(path / "tests"),
        environment_hash=tree_hash(path / "environment"),
    )


def load_tasks(tasks_dir: Path, only: list[str] | None = None) -> tuple[list[TaskSpec], list[TaskError]]:
    """Every task folder under `tasks_dir` (sorted by id); broken ones come back as TaskErrors."""
    if not tasks_dir.is_dir():
        raise UserError(f"no such tasks directory: {tasks_dir}")
    if (tasks_dir / "task.toml").is_file():  # its environment/, tests/, solution/ are no tasks
        raise UserError(
            f"{tasks_dir} is a task folder (it has a task.toml): pass the folder that holds it, "
            f"{tasks_dir.parent} (with --tasks {tasks_dir.name} for this one only)"
        )
    folders = sorted(p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if only:
        known = {f.name for f in folders}
        missing = [t for t in only if t not in known]
        if missing:
            raise UserError(f"unknown task(s) in --tasks: {', '.join(missing)}")
        folders = [f for f in folders if f.name in set(only)]
    if not folders:
        raise UserError(f"{tasks_dir}: no task folders")
    if not any((f / "task.toml").is_file() for f in folders):  # not a tasks directory at all (a typo, a parent)
        raise UserError(f"{tasks_dir}: no task folders (none of its {len(folders)} folders has a task.toml)")
    specs: list[TaskSpec] = []
    errors: list[TaskError] = []
    for folder in folders:
        try:
            specs.append(load_task(folder))
        except (ValueError, OSError) as exc:
            errors.append(TaskError(task_id=folder.name, message=str(exc)))
    return specs, errors

"""Load Harbor-compatible task folders (a task's id is its folder name).

A folder holds `instruction.md`, `task.toml`, `environment/` (optional `Dockerfile`),
`tests/test.sh` (+ optional `tests/config.json` with FAIL_TO_PASS / PASS_TO_PASS) and
`solution/solve.sh`. A broken folder becomes a `TaskError` for that task only.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import tomllib
import warnings
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from trialbook.errors import InputWarning, UserError
from trialbook.records import Task, repo_from_task_id
from trialbook.tasks.testscript import TestScript

DEFAULT_AGENT_TIMEOUT = 600.0
DEFAULT_VERIFIER_TIMEOUT = 600.0


class TaskError(BaseModel):
    """A task folder that cannot be run, with the one-line reason."""

    task_id: str
    message: str


class _Section(BaseModel):
    # strict: TOML has types, so "600" for a number or 1 for a flag is a mistake, not something to coerce;
    # keys outside the models are checked by unknown_keys (HARBOR_ONLY's are accepted and not applied)
    model_config = ConfigDict(extra="ignore", strict=True)


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
    # is stopped (outcome disk_quota, graded) or the tests graded 0 (sandbox/quota.py, started by Sandbox.watch_disk)
    disk_mb: int = Field(10240, gt=0, le=1 << 30)
    allow_network: bool = False
    # a network on which every address past the sandbox is unroutable (sandbox/backend.py UNROUTABLE): for test
    # suites that expect a connect to time out (10.255.255.1) rather than fail at once as with no network
    unroutable_network: bool = False
    # how the agent's shell starts (SWE-bench images keep the repo's Python in a conda env)
    workdir: str | None = None
    shell_setup: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


class _TaskToml(_Section):
    agent: _Agent = Field(default_factory=_Agent)
    verifier: _Verifier = Field(default_factory=_Verifier)
    environment: _Environment = Field(default_factory=_Environment)
    metadata: dict[str, Any] = Field(default_factory=dict)


# Harbor's task.toml schema versions whose keys are all known here (the models above and HARBOR_ONLY): a task
# declaring a newer one (`version` or `schema_version`) may use keys from the future, which are warned of, not refused
KNOWN_SCHEMA = (1, 1)
# Harbor task.toml keys trialbook accepts and does not apply (so that a Harbor task loads), per section ("" = top)
HARBOR_ONLY: dict[str, frozenset[str]] = {
    "": frozenset({"version", "schema_version", "task", "source", "solution"}),
    "agent": frozenset({"user", "network_mode", "allowed_hosts"}),
    "verifier": frozenset({"env", "user", "network_mode", "allowed_hosts"}),
    "environment": frozenset(
        {
            "build_timeout_sec",
            "storage_mb",
            "gpus",
            "gpu_types",
            "allow_internet",
            "network_mode",
            "allowed_hosts",
            "mcp_servers",
            "skills_dir",
            "healthcheck",
            "memory",
            "storage",
        }
    ),  # fmt: skip
}
_SECTIONS: dict[str, type[BaseModel]] = {
    "": _TaskToml, "agent": _Agent, "verifier": _Verifier, "environment": _Environment,
}  # fmt: skip


def _known(section: str) -> set[str]:
    return set(_SECTIONS[section].model_fields) | HARBOR_ONLY[section]


def _unknown_key(section: str, key: str) -> tuple[str, str]:
    """`key` of `section` as task.toml spells it, and the nearest known key (or the section it belongs in)."""
    shown = key if key.isprintable() and key.strip() == key and key else repr(key)  # a quoted TOML key may hold "\n"
    where = f"[{section}] {shown}" if section else shown
    homes = [f"[{name}]" if name else "the top level" for name in _SECTIONS if name != section and key in _known(name)]
    if homes:
        return where, f" (it belongs in {' or '.join(homes)})"
    near = difflib.get_close_matches(key, sorted(_known(section)), n=1, cutoff=0.6)
    return where, f" (did you mean {near[0]}?)" if near else ""


def unknown_keys(raw: dict[str, Any]) -> list[tuple[str, str]]:
    """The keys of a parsed task.toml no section knows, each with its hint (`_unknown_key`)."""
    found = [_unknown_key("", k) for k in raw if k not in _known("")]
    for section in ("agent", "verifier", "environment"):
        table = raw.get(section)
        if isinstance(table, dict):
            found += [_unknown_key(section, k) for k in table if k not in _known(section)]
    return found


def _schema(raw: dict[str, Any]) -> tuple[int, ...] | None:
    """The schema version the task declares (None: none), checked: a string like "1.1"."""
    value = raw.get("schema_version", raw.get("version"))
    if value is None:
        return None
    if not (isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)*", value)):
        raise ValueError(f'invalid task.toml: version must be a string like "1.1", not {value!r}')
    return tuple(int(part) for part in value.split("."))


def read_text(path: Path, name: str) -> str:
    """A task file's text; not UTF-8 is one line naming the file and where (a ValueError: the task is broken)."""
    data = path.read_bytes()
    try:
        return data.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{name} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") from None


SHELLS = frozenset({"sh", "bash", "dash"})  # the verifier runs test.sh with bash (verify/runner.py)


def _check_test_sh(path: Path) -> None:
    """test.sh must be a script bash can run: text, and no #! naming another interpreter (it would not be used)."""
    data = path.read_bytes()
    if b"\0" in data:
        raise ValueError(f"tests/test.sh is not a script: binary content (a NUL byte at offset {data.index(0)})")
    first = read_text(path, "tests/test.sh").split("\n", 1)[0]
    if first.startswith("#!"):
        words = first[2:].split()
        prog = Path(words[0]).name if words else ""
        if prog == "env":  # #!/usr/bin/env [-S] [VAR=value ...] PROGRAM
            prog = next((w for w in words[1:] if not w.startswith("-") and "=" not in w), "")
        if Path(prog).name not in SHELLS:
            raise ValueError(f"tests/test.sh starts with {first.strip()!r}: the verifier runs test.sh with bash")


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
    unroutable_network: bool = False  # [environment] unroutable_network
    disk_mb: int = 10240
    workdir: str | None = None
    shell_setup: str | None = None  # sourced by every `bash` in the sandbox (BASH_ENV), agents and verifier
    env: dict[str, str] = Field(default_factory=dict)
    fail_to_pass: list[str] | None = None
    pass_to_pass: list[str] | None = None
    # a listed test's status with the reference solution where it is not PASSED (config.json GOLD_STATUSES, e.g.
    # XFAIL for a test the task's own files mark xfail): the strict verdict's anchor (verify/grading.strict_verdict)
    gold_statuses: dict[str, str] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    verifier_hash: str
    environment_hash: str
    _test_script: TestScript | None = PrivateAttr(default=None)

    @property
    def test_script(self) -> TestScript:
        """The facts of the task's tests/ folder (tasks/testscript.py), read on first use and kept: the verifier's
        one source of them. A copy of the spec with another folder (`model_copy(update={"path": ...})`) reads its
        own."""
        script = self._test_script
        if script is None or script.tests_dir != self.tests_dir:
            script = self._test_script = TestScript.read(self.tests_dir)
        return script

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
            solution=read_text(solve, "solution/solve.sh") if solve.is_file() else None,
        )


def tree_hash(folder: Path) -> str:
    """sha256 over relative paths and contents: the identity of a verifier or environment."""
    h = hashlib.sha256()
    if folder.is_dir():
        for f in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(f.relative_to(folder).as_posix().encode() + b"\0")
            h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def _test_list(data: dict[str, Any], key: str) -> list[str] | None:
    value = data.get(key)
    if isinstance(value, str):  # SWE-bench stores them as JSON strings
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            msg = f"tests/config.json: {key} is a string that is not a JSON list of test names ({exc})"
            raise ValueError(msg) from None
    if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError(f"tests/config.json: {key} must be a list of test names, not {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        others = sorted({_json_type(v) for v in value if not isinstance(v, str)})
        return f"a list holding {' and '.join(others)}" if others else "a list"
    names = {dict: "an object", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _test_lists(tests: Path) -> tuple[list[str] | None, list[str] | None]:
    config = tests / "config.json"
    if not config.is_file():
        return None, None
    try:
        data = json.loads(read_text(config, "tests/config.json"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"tests/config.json is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"tests/config.json must be a JSON object (FAIL_TO_PASS, ...), not {_json_type(data)}")
    return _test_list(data, "FAIL_TO_PASS"), _test_list(data, "PASS_TO_PASS")


def _gold_statuses(tests: Path) -> dict[str, str]:
    config = tests / "config.json"
    data = json.loads(config.read_text()) if config.is_file() else {}
    gold = data.get("GOLD_STATUSES") or {} if isinstance(data, dict) else {}
    if not (isinstance(gold, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in gold.items())):
        raise ValueError("tests/config.json: GOLD_STATUSES must map test names to statuses (PASSED, XFAIL, ...)")
    return gold


def load_task(path: Path) -> TaskSpec:
    """Parse one task folder; raises ValueError with a one-line reason when it cannot run."""
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise ValueError("missing task.toml")
    try:
        raw = tomllib.loads(read_text(toml_path, "task.toml"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid task.toml: {exc}") from None
    unknown = unknown_keys(raw)
    schema = _schema(raw)
    if unknown and (schema is None or schema <= KNOWN_SCHEMA):
        raise ValueError("invalid task.toml: " + "; ".join(f"unknown key {key}{hint}" for key, hint in unknown))
    if unknown:  # forward compatibility: a newer schema's keys are not applied, and that is said
        newer = ".".join(map(str, schema or ()))
        msg = f"task {path.name}: task.toml declares schema {newer}, newer than {'.'.join(map(str, KNOWN_SCHEMA))}"
        warnings.warn(f"{msg}; keys ignored: {', '.join(key for key, _ in unknown)}", InputWarning, stacklevel=2)
    try:
        parsed = _TaskToml.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"invalid task.toml: {where}: {first['msg']}") from None
    if not (path / "tests" / "test.sh").is_file():
        raise ValueError("missing tests/test.sh")
    _check_test_sh(path / "tests" / "test.sh")
    if (path / "solution" / "solve.sh").is_file():  # read again by TaskSpec.record when the run is opened
        read_text(path / "solution" / "solve.sh", "solution/solve.sh")
    env = parsed.environment
    if env.allow_network and env.unroutable_network:
        raise ValueError("task.toml: [environment] allow_network and unroutable_network exclude each other")
    if env.docker_image is None and not (path / "environment" / "Dockerfile").is_file():
        raise ValueError("task.toml has no [environment] docker_image and there is no environment/Dockerfile")
    instruction = path / "instruction.md"
    f2p, p2p = _test_lists(path / "tests")
    return TaskSpec(
        task_id=path.name,
        path=path.resolve(),
        instruction=read_text(instruction, "instruction.md") if instruction.is_file() else "",
        agent_timeout=parsed.agent.timeout_sec,
        verifier_timeout=parsed.verifier.timeout_sec,
        isolation=parsed.verifier.isolation,
        image=env.docker_image,
        cpus=env.cpus,
        memory_mb=env.memory_mb,
        pids_limit=env.pids_limit,
        disk_mb=env.disk_mb,
        allow_network=env.allow_network,
        unroutable_network=env.unroutable_network,
        workdir=env.workdir,
        shell_setup=env.shell_setup,
        env=env.env,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        gold_statuses=_gold_statuses(path / "tests") if f2p is not None or p2p is not None else {},
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
            f"{tasks_dir.parent} (with --task {tasks_dir.name} for this one only)"
        )
    folders = sorted(p for p in tasks_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    if only:
        known = {f.name for f in folders}
        missing = [t for t in only if t not in known]
        if missing:
            raise UserError(f"unknown task(s) in --task: {', '.join(missing)}")
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

"""The `mini-swe-agent` agent: mini-swe-agent as the SWE-bench leaderboard ran it, on a trial's sandbox.

Unlike `mini` (a shortened prompt for 2k-token models on mini-swe-agent's loop), this one loads mini-swe-agent's
own config file unchanged (`swebench.yaml` from the installed wheel by default: its bash tool, parallel tool
calls, its templates and limits) and builds the agent and the model the way mini-swe-agent's own runner does
(`DefaultAgent(**config["agent"])`, `get_model(config=config["model"])`, litellm underneath). Only the model's
address changes: `openai/<model>` at the trial's endpoint (the gateway's `/t/<trial>/v1` in a rollout), so every
call is recorded there with its token ids. The environment is the trial's sandbox, with the config's
`environment` section (cwd, env, timeout) honoured; the config's `environment_class` (docker) is not used.

`config` (an agent option) is a config name of the wheel's `config/benchmarks/` (`swebench`, the default, or
`swebench_backticks`: the text-parsed twin, run with mini-swe-agent's `litellm_textbased` model class since its
instance template asks for ```mswea_bash_command blocks) or a YAML file's path. The run's stack records the
file's name and sha256 (`agent_config`, `agent_config_sha256`). `--agent mini-swe-agent-backticks` is the same
agent with `config=swebench_backticks`.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field

from trialbook.agents.base import AgentResult, AgentTimeoutError, ContextOverflowError, FormatError, option_error
from trialbook.agents.endpoints import EndpointError, first_model, normalize, probe
from trialbook.errors import UserError
from trialbook.extras import require
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")  # its banner would pollute `--json` stdout
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches its price list at import otherwise
require("agent", "the mini-swe-agent agent")

import minisweagent  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.exceptions import Submitted, TimeExceeded  # noqa: E402
from minisweagent.models import get_model  # noqa: E402

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
BENCHMARKS = Path(minisweagent.__file__).parent / "config" / "benchmarks"
TEXT_BASED = {"swebench_backticks": "litellm_textbased"}  # configs that name no model class but need this one


class MiniSweOptions(BaseModel):
    config: str = "swebench"  # a config of the wheel's config/benchmarks/, or a YAML file's path
    endpoints: list[str] = Field(default_factory=list)
    model: str | None = None  # default: the first model the endpoint lists
    max_turns: int | None = Field(None, ge=1)  # default: the config's step_limit
    command_timeout: float | None = Field(None, gt=0)  # default: the config's environment.timeout


def load_config(config: str) -> tuple[dict[str, Any], str, str]:
    """(the config, its name, the sha256 of its bytes): a name of the wheel's benchmarks/, or a file."""
    path = Path(config)
    if not path.suffix:
        path = BENCHMARKS / f"{config}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in BENCHMARKS.glob("*.yaml")))
            raise UserError(f"mini-swe-agent has no config {config!r} (known: {known}; or a YAML file's path)")
    if not path.is_file():
        raise UserError(f"mini-swe-agent config {config}: no such file")
    raw = path.read_bytes()
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise UserError(f"mini-swe-agent config {config}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("agent"), dict):
        raise UserError(f"mini-swe-agent config {config}: no `agent:` section")
    return data, path.name, hashlib.sha256(raw).hexdigest()


class MiniSweEnvironment:
    """mini-swe-agent's Environment protocol over the trial's sandbox, with the config's environment section."""

    def __init__(self, sandbox: Box, config: dict[str, Any], deadline: float, timeout: float) -> None:
        self.sandbox = sandbox
        self.cwd = str(config.get("cwd") or "")
        self.env = {str(k): str(v) for k, v in (config.get("env") or {}).items()}
        self.timeout = timeout
        self.deadline = deadline
        self.config = {"cwd": self.cwd, "env": self.env, "timeout": timeout, "container": sandbox.name}

    def execute(self, action: dict[str, Any], cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        if self.sandbox.stop.is_set():  # the run's --deadline or Ctrl-C: end the loop, the harness decides
            raise TimeExceeded({"role": "exit", "content": "the run was stopped",
                                "extra": {"exit_status": "TimeExceeded", "submission": ""}})  # fmt: skip
        limit = max(min(timeout or self.timeout, self.deadline - time.monotonic()), 0.5)
        res = self.sandbox.exec(["bash", "-c", action.get("command", "")], timeout=limit, env=self.env,
                                workdir=cwd or self.cwd or None)  # fmt: skip
        output: dict[str, Any] = {"output": res.output, "returncode": res.exit_code, "exception_info": ""}
        if res.timed_out:
            output["returncode"] = -1
            output["exception_info"] = f"An error occurred while executing the command: timed out after {limit:.0f} s"
        lines = res.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT and res.exit_code == 0:
            submission = "".join(lines[1:])
            raise Submitted({"role": "exit", "content": submission,
                             "extra": {"exit_status": "Submitted", "submission": submission}})  # fmt: skip
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, **kwargs}

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": self.config, "environment_type": "trialbook.sandbox"}}}


class MiniSweAgent:
    name = "mini-swe-agent"

    def __init__(self, options: MiniSweOptions) -> None:
        if not options.endpoints:
            raise UserError("the mini-swe-agent agent needs the model's URL: --endpoint URL (or a rollout's gateway)")
        self.options = options
        self.config, self.config_name, self.config_sha = load_config(options.config)
        self.url = normalize(options.endpoints[0])
        self._model = options.model

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> MiniSweAgent:
        try:
            return cls(MiniSweOptions.model_validate(options))
        except ValueError as exc:
            raise option_error("mini-swe-agent", exc) from None

    def model_name(self) -> str:
        if self._model is None:
            self._model = first_model(self.url)
        return self._model

    def stack(self) -> dict[str, Any]:
        try:
            info = probe(self.url)
        except EndpointError as exc:
            raise UserError(f"cannot start the mini-swe-agent agent: {exc}") from None
        return {"engine": info.engine or "unknown", "engine_version": info.engine_version or "unknown",
                "model": self.model_name(), "endpoints": 1,
                "agent_loop": f"mini-swe-agent {minisweagent.__version__}",
                "agent_config": self.config_name, "agent_config_sha256": self.config_sha}  # fmt: skip

    def _model_config(self, base_url: str) -> dict[str, Any]:
        model = dict(self.config.get("model") or {})
        model["model_name"] = f"openai/{self.model_name()}"
        model["model_kwargs"] = {**(model.get("model_kwargs") or {}), "api_base": base_url, "api_key": "trialbook"}
        model["cost_tracking"] = "ignore_errors"  # a local model has no price
        stem = Path(self.config_name).stem
        if "model_class" not in model and stem in TEXT_BASED:
            model["model_class"] = TEXT_BASED[stem]
        return model

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        start = time.monotonic()
        deadline = start + timeout
        env_config = self.config.get("environment") or {}
        command_timeout = float(self.options.command_timeout or env_config.get("timeout") or 60)
        if task.workdir and env_config.get("cwd") and env_config["cwd"] != task.workdir:
            env_config = {**env_config, "cwd": task.workdir}  # the task says where its repository is
        env = MiniSweEnvironment(sandbox, env_config, deadline, command_timeout)
        model = get_model(config=self._model_config(self.url))
        agent_config = {**self.config["agent"], "wall_time_limit_seconds": max(int(timeout), 1), "cost_limit": 0}
        if self.options.max_turns:
            agent_config["step_limit"] = self.options.max_turns
        loop = DefaultAgent(model, env, **agent_config)
        error: Exception | None = None
        try:
            loop.run(task.instruction)
        except Exception as exc:  # the model call failed for good (litellm's abort exceptions, retries spent)
            error = exc
        status = (loop.messages[-1].get("extra") or {}).get("exit_status", "") if loop.messages else ""
        result = self._result(loop, status, time.monotonic() - start)
        if status == "Submitted":
            return result
        if error is not None:
            if "ContextWindowExceeded" in type(error).__name__ or "context length" in str(error).lower():
                raise ContextOverflowError(f"the server refused the prompt: {str(error)[:300]}", result)
            raise EndpointError(f"the model call failed: {type(error).__name__}: {str(error)[:300]}")
        if status == "RepeatedFormatError":
            raise FormatError(
                f"{loop.config.max_consecutive_format_errors} replies in a row had no valid action", result
            )
        if status == "TimeExceeded":
            raise AgentTimeoutError(f"agent ran past its {timeout:g} s limit", result)
        if status == "LimitsExceeded":
            raise AgentTimeoutError(f"agent spent its turn budget ({loop.n_calls} turns)", result)
        return result

    def _result(self, loop: DefaultAgent, status: str, duration: float) -> AgentResult:
        usage = [((m.get("extra") or {}).get("response") or {}).get("usage") or {} for m in loop.messages]
        prompt = sum(int(u.get("prompt_tokens") or 0) for u in usage)
        completion = sum(int(u.get("completion_tokens") or 0) for u in usage)
        trajectory = loop.serialize({"info": {"exit_status": status, "agent_config": self.config_name,
                                              "agent_config_sha256": self.config_sha}})  # fmt: skip
        log = "\n".join(f"--- {m.get('role')}\n{m.get('content') or ''}" + "".join(
            f"\n[tool call {tc.get('function', {}).get('name')}] {tc.get('function', {}).get('arguments')}"
            for tc in m.get("tool_calls") or []) for m in loop.messages) + "\n"  # fmt: skip
        return AgentResult(
            exit_code=0 if status == "Submitted" else None,
            log=log,
            duration_s=round(duration, 3),
            turns=loop.n_calls,
            tokens=prompt + completion,
            files={"trajectory.json": json.dumps(trajectory, indent=1, default=str)},
            info={
                "exit_status": status,
                "submitted": status == "Submitted",
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "model": self.model_name(),
                "agent_config": self.config_name,
                "agent_config_sha256": self.config_sha,
            },  # fmt: skip
        )


class MiniSweBackticksAgent(MiniSweAgent):
    """`--agent mini-swe-agent-backticks`: the same, with the text-parsed `swebench_backticks.yaml`."""

    name = "mini-swe-agent-backticks"

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> MiniSweAgent:
        return super().from_options({"config": "swebench_backticks", **options})

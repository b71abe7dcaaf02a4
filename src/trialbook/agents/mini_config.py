"""The `mini` agent's settings as data: `MiniOptions` (stored in the run config as `agent_options`), read from a
config file in mini-swe-agent's own YAML shape (`--agent-config FILE`), `-c key=value` overrides and the flags.

No mini-swe-agent import here: `run --help` prints these defaults without the `agent` extra.

mini-swe-agent's shape, and what trialbook takes from it (the rest, such as `model.model_name`, a litellm
provider name, or `agent.cost_limit`, is not used: `--model` names the served model and nothing here costs money):

    agent:        system_template, instance_template, step_limit (-> max_turns)
    model:        observation_template, format_error_template, action_regex (text actions), model_class,
                  model_kwargs: temperature, top_p, seed, max_tokens / max_completion_tokens, stop, and any
                  other key the server takes (sent as is, e.g. `reasoning_effort`, `extra_body`)
    environment:  timeout (-> command_timeout), env (commands run in the task's own workdir, whatever `cwd` says)

A config with `action_regex` (or a `*textbased*` model class) has the model reply in text with a fenced command;
any other (mini-swe-agent's own default, its swebench.yaml) calls the `bash` tool (OpenAI tool calls).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field

from trialbook.errors import UserError

SUBMIT = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

# trialbook's own prompts: short on purpose (a small model's 2k-token window); the action format is mini-swe-agent's
SYSTEM_TEMPLATE = """You are a software engineer working in a Linux shell on a code repository.
Every reply: one short THOUGHT line, then exactly ONE bash command in a block like this:

```mswea_bash_command
ls
```

Each command runs in a new shell in the repository. When the fix is done, reply with the command
`echo @SUBMIT@` alone.""".replace("@SUBMIT@", SUBMIT)

INSTANCE_TEMPLATE = """Fix this issue in the repository:

{{task}}

Reply with one THOUGHT line and one ```mswea_bash_command block."""

OBSERVATION_TEMPLATE = """<returncode>{{output.returncode}}</returncode>
{% if output.exception_info %}<exception>{{output.exception_info}}</exception>
{% endif %}<output>
{{ output.output[-3000:] }}</output>"""

FORMAT_ERROR_TEMPLATE = """Format error: {{error}} Reply with one THOUGHT line and exactly ONE
```mswea_bash_command block (to finish: echo @SUBMIT@).""".replace("@SUBMIT@", SUBMIT)

ACTION_REGEX = r"```mswea_bash_command\s*\n(.*?)\n```"

# litellm's own keys in a model_kwargs: meaningless to an HTTP server (api_key: never from a file, see --api-key-env)
LITELLM_ONLY = {"drop_params", "custom_llm_provider", "api_base", "api_key", "base_url", "num_retries"}


class MiniOptions(BaseModel):
    """The agent's settings (stored in the run config as `agent_options`; `trialbook show RUN` prints the stack)."""

    endpoints: list[str] = Field(default_factory=list)
    model: str | None = None  # default: the first model the endpoint lists
    api_key_env: str | None = None  # the NAME of the variable holding the key (default OPENAI_API_KEY, if set)
    headers: dict[str, str] = Field(default_factory=dict)  # sent on every request (stored: no secrets here)
    max_turns: int = Field(30, ge=1)  # model calls
    max_tokens: int = Field(0, ge=0)  # prompt + completion tokens over the trial; 0: no limit
    max_output_tokens: int = Field(4096, ge=1)  # per call (`max_tokens` in the request)
    max_format_errors: int = Field(3, ge=1)  # in a row, then format_error
    temperature: float = Field(1.0, ge=0, allow_inf_nan=False)
    top_p: float = Field(1.0, gt=0, le=1, allow_inf_nan=False)
    seed: int | None = 0  # the run's seed: each (task, attempt) gets its own, derived (attempt_seed); None: none sent
    stop: list[str] | None = None
    model_kwargs: dict[str, Any] = Field(default_factory=dict)  # any other request field, sent as is
    command_timeout: float = Field(60.0, gt=0)  # one bash action
    logprobs: bool = False  # ask for token logprobs (recorded per call when returned)
    actions: Literal["text", "toolcall"] = "text"  # a fenced block in the reply, or the `bash` tool
    system_template: str = SYSTEM_TEMPLATE
    instance_template: str = INSTANCE_TEMPLATE
    observation_template: str = OBSERVATION_TEMPLATE
    format_error_template: str = FORMAT_ERROR_TEMPLATE
    action_regex: str = ACTION_REGEX
    env: dict[str, str] = Field(default_factory=dict)  # every command's environment (besides the task's)
    agent_config: str | None = None  # the config file given (path and sha256, for the record)


DEFAULTS = MiniOptions()


def attempt_seed(run_seed: int, task_id: str, attempt: int) -> int:
    """One trial's sampling seed from the run's: fixed per (task, attempt), different between attempts (two attempts
    at one seed are copies on an engine that honours seeds), the same when `resume`/`rerun` run it again."""
    digest = hashlib.sha256(f"{run_seed}\0{task_id}\0{attempt}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1  # 31 bits: every engine takes it


def read_config(path: Path) -> dict[str, Any]:
    """A mini-swe-agent config file as a dict; one line on anything wrong with it."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise UserError(f"--agent-config {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise UserError(f"--agent-config {path}: not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict) or any(not isinstance(data.get(k, {}), dict) for k in ("agent", "model")):
        raise UserError(f"--agent-config {path}: expected mini-swe-agent's shape (agent:, model:, environment:)")
    return data


def override(config: dict[str, Any], pairs: list[str]) -> dict[str, Any]:
    """`-c key=value` (repeatable): a dotted key into the config (`model.model_kwargs.temperature=0.6`), or one of
    MiniOptions' own names (`temperature=0.6`); the value is read as YAML (numbers, true/false, lists)."""
    out: dict[str, Any] = _copy(config)
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UserError(f"-c {pair}: expected KEY=VALUE, e.g. -c model.model_kwargs.temperature=0.6")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError:
            value = text
        parts = key.split(".")
        if len(parts) == 1:
            if key not in MiniOptions.model_fields or key in ("endpoints", "agent_config"):
                raise UserError(f"-c {key}: not a mini option (a dotted key sets the config: agent.step_limit=...)")
            out.setdefault("trialbook", {})[key] = value
            continue
        node = out
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise UserError(f"-c {key}: {part} is not a section of the config")
            node = nxt
        node[parts[-1]] = value
    return out


def _copy(data: Any) -> Any:
    return {k: _copy(v) for k, v in data.items()} if isinstance(data, dict) else data


def options_from_config(config: dict[str, Any]) -> dict[str, Any]:
    """MiniOptions fields from a config in mini-swe-agent's shape (only those it sets)."""
    agent, model = config.get("agent") or {}, config.get("model") or {}
    env = config.get("environment") or {}
    kwargs = dict(model.get("model_kwargs") or {})
    out: dict[str, Any] = {}
    for key in ("system_template", "instance_template"):
        if key in agent:
            out[key] = agent[key]
    if agent.get("step_limit"):  # 0 is mini-swe-agent's "no limit": trialbook keeps its own
        out["max_turns"] = agent["step_limit"]
    for key in ("observation_template", "format_error_template", "action_regex"):
        if key in model:
            out[key] = model[key]
    model_class = str(model.get("model_class") or "")
    if config.get("model"):
        out["actions"] = "text" if "action_regex" in model or "textbased" in model_class else "toolcall"
    for key in ("temperature", "top_p", "seed", "stop"):
        if key in kwargs:
            out[key] = kwargs.pop(key)
    for key in ("max_completion_tokens", "max_tokens"):  # the second wins, as OpenAI's servers read them
        if key in kwargs:
            out["max_output_tokens"] = kwargs.pop(key)
    rest = {k: v for k, v in kwargs.items() if k not in LITELLM_ONLY and k != "parallel_tool_calls"}
    if rest:
        out["model_kwargs"] = rest
    if "timeout" in env:
        out["command_timeout"] = env["timeout"]
    if isinstance(env.get("env"), dict):
        out["env"] = {str(k): str(v) for k, v in env["env"].items()}
    out.update(config.get("trialbook") or {})  # -c NAME=VALUE of MiniOptions' own names
    return out


def config_options(path: Path | None, pairs: list[str] | None) -> dict[str, Any]:
    """The agent options `--agent-config FILE` and `-c key=value` give (flags given on the command line win)."""
    if path is None and not pairs:
        return {}
    config = read_config(path) if path is not None else {}
    out = options_from_config(override(config, pairs or []))
    if path is not None:
        out["agent_config"] = f"{path.resolve()} sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    return out

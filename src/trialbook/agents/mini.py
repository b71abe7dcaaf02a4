"""The `mini` agent: mini-swe-agent's own agent loop driving a trialbook sandbox.

mini-swe-agent (`minisweagent.agents.default.DefaultAgent`) runs the loop: query the model, parse
one bash action, execute it, observe. trialbook plugs in two small pieces it defines by protocol:
an Environment that runs actions in the trial's Docker sandbox, and a Model that posts to any
OpenAI-compatible `/v1/chat/completions` (spread over endpoints by least outstanding requests).

How the loop ended becomes the trial's outcome (the sandbox is graded in every case):
  Submitted -> the verifier decides · RepeatedFormatError -> format_error ·
  the server's context-length refusal -> context_overflow · turn/token/wall-time budget -> agent_timeout.
An unreachable or failing endpoint raises EndpointError: infra_error, retried, never graded 0.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from trialbook.agents.base import AgentResult, AgentTimeoutError, ContextOverflowError, FormatError, option_error
from trialbook.agents.endpoints import (
    ContextLengthError,
    EndpointError,
    EndpointModelError,
    EndpointPool,
    EngineInfo,
    auth_headers,
    first_model,
    probe,
)
from trialbook.agents.mini_config import SUBMIT, MiniOptions, attempt_seed
from trialbook.errors import UserError
from trialbook.extras import require
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")  # its banner would pollute `--json` stdout
require("agent", "the mini agent")

from minisweagent import __version__ as MINI_VERSION  # noqa: E402
from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.exceptions import FormatError as MiniFormatError  # noqa: E402
from minisweagent.exceptions import LimitsExceeded, Submitted, TimeExceeded  # noqa: E402
from minisweagent.models.utils.actions_text import format_observation_messages, parse_regex_actions  # noqa: E402
from minisweagent.models.utils.actions_toolcall import (  # noqa: E402
    BASH_TOOL,
    format_toolcall_observation_messages,
    parse_toolcall_actions,
)

__all__ = ["MiniAgent", "MiniOptions"]


class SandboxEnvironment:
    """mini-swe-agent Environment: each action is `bash -c` in the trial's container."""

    def __init__(
        self,
        sandbox: Box,
        deadline: float,
        command_timeout: float,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.deadline = deadline
        self.command_timeout = command_timeout
        self.env = env or {}
        self.cwd = cwd
        self.config = {"container": sandbox.name, "command_timeout": command_timeout, "cwd": cwd, "env": env}

    def execute(self, action: dict[str, Any], cwd: str = "") -> dict[str, Any]:
        if self.sandbox.stop.is_set():  # the run's --deadline or Ctrl-C: end the loop, the harness decides
            raise TimeExceeded({"role": "exit", "content": "the run was stopped", "extra": _exit("TimeExceeded")})
        timeout = max(min(self.command_timeout, self.deadline - time.monotonic()), 0.5)
        env = {"PAGER": "cat", "MANPAGER": "cat", "PIP_PROGRESS_BAR": "off", "TQDM_DISABLE": "1", **self.env}
        res = self.sandbox.exec(
            ["bash", "-c", action.get("command", "")], timeout=timeout, env=env, workdir=cwd or self.cwd or None
        )
        output: dict[str, Any] = {"output": res.output, "returncode": res.exit_code, "exception_info": ""}
        if res.timed_out:
            output["returncode"] = -1
            output["exception_info"] = f"the command ran past {timeout:.0f} s and was killed"
        lines = res.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT and res.exit_code == 0:
            submission = "".join(lines[1:])
            raise Submitted(
                {"role": "exit", "content": submission, "extra": {"exit_status": "Submitted", "submission": submission}}
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return dict(kwargs)

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"environment": self.config, "environment_type": "trialbook.sandbox.docker"}}}


class ChatModel:
    """mini-swe-agent Model over OpenAI-compatible chat completions (text-based actions)."""

    def __init__(
        self, pool: EndpointPool, options: MiniOptions, model: str, deadline: float, seed: int | None = None
    ) -> None:
        self.pool = pool
        self.options = options
        self.deadline = deadline
        self.seed = seed  # this trial's (attempt_seed of the run's)
        self.config = {"model_name": model, "endpoints": pool.urls, "seed_used": seed,
                       **options.model_dump(exclude={"endpoints", "headers"})}  # fmt: skip
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.calls: list[dict[str, Any]] = []  # per call: endpoint, tokens, finish reason, logprobs

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def _payload(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        opts = self.options
        payload: dict[str, Any] = {
            **opts.model_kwargs,
            "model": self.config["model_name"],
            "messages": [_api_message(m) for m in messages],
            "max_tokens": opts.max_output_tokens,
            "temperature": opts.temperature,
            "top_p": opts.top_p,
        }
        if opts.actions == "toolcall":
            payload["tools"] = [BASH_TOOL]
        if self.seed is not None:
            payload["seed"] = self.seed
        if opts.stop:
            payload["stop"] = opts.stop
        if self.options.logprobs:
            payload["logprobs"] = True
            payload["top_logprobs"] = 1  # llama-cpp-python returns none without it
        return payload

    def query(self, messages: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        opts = self.options
        if opts.max_tokens and self.tokens >= opts.max_tokens:
            raise LimitsExceeded({"role": "exit", "content": "token budget spent", "extra": _exit("TokensExceeded")})
        remaining = self.deadline - time.monotonic()
        try:
            body, url = self.pool.chat(self._payload(messages), timeout=remaining)
        except TimeoutError:
            raise TimeExceeded({"role": "exit", "content": "model call ran past the time limit",
                                "extra": _exit("TimeExceeded")}) from None  # fmt: skip
        choice = body["choices"][0]
        usage = body.get("usage") or {}
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        message = choice.get("message") or {}
        content = message.get("content") or ""
        call = {
            "endpoint": url,
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "finish_reason": choice.get("finish_reason"),
            "logprobs": _logprobs(choice),
            "token_ids": choice.get("token_ids"),
            "prompt_token_ids": body.get("prompt_token_ids") or choice.get("prompt_token_ids"),
        }
        self.calls.append(call)
        extra = {"endpoint": url, "usage": usage, "cost": 0.0, "timestamp": time.time()}
        tool_calls = message.get("tool_calls") or []
        try:
            if opts.actions == "toolcall":
                actions = parse_toolcall_actions(
                    [_ToolCall(c) for c in tool_calls if isinstance(c, dict)],
                    format_error_template=opts.format_error_template,
                    template_kwargs={"finish_reason": choice.get("finish_reason")},
                )
            else:
                actions = parse_regex_actions(
                    content,
                    action_regex=opts.action_regex,
                    format_error_template=opts.format_error_template,
                    template_kwargs={"finish_reason": choice.get("finish_reason")},
                )
        except MiniFormatError as exc:  # mini-swe-agent keeps only its error prompt: keep what the model said too
            exc.messages[0]["extra"].update(extra, model_reply=content)
            raise
        reply: dict[str, Any] = {"role": "assistant", "content": content, "extra": {"actions": actions, **extra}}
        if opts.actions == "toolcall" and tool_calls:
            reply["tool_calls"] = tool_calls
        return reply

    def format_message(self, **kwargs: Any) -> dict[str, Any]:
        return dict(kwargs)

    def format_observation_messages(
        self, message: dict[str, Any], outputs: list[dict[str, Any]], template_vars: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        template = self.options.observation_template
        if self.options.actions == "toolcall":
            actions = (message.get("extra") or {}).get("actions") or []
            return format_toolcall_observation_messages(
                actions=actions, outputs=outputs, observation_template=template, template_vars=template_vars
            )
        return format_observation_messages(outputs, observation_template=template, template_vars=template_vars)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.config)

    def serialize(self) -> dict[str, Any]:
        return {"info": {"config": {"model": self.config, "model_type": "trialbook.agents.mini.ChatModel"}}}


class _ToolCall:
    """An OpenAI tool call (JSON) as mini-swe-agent's parser reads one (attributes, as litellm's objects have)."""

    def __init__(self, call: dict[str, Any]) -> None:
        function = call.get("function") or {}
        self.id = call.get("id")
        self.function = type("Function", (), {"name": function.get("name"), "arguments": function.get("arguments")})


def _api_message(m: dict[str, Any]) -> dict[str, Any]:
    """A message as the chat API takes it: role and content, and a tool call's id / an assistant's tool calls."""
    out: dict[str, Any] = {"role": m["role"], "content": m.get("content") or ""}
    for key in ("tool_calls", "tool_call_id"):
        if m.get(key):
            out[key] = m[key]
    return out


def _exit(status: str) -> dict[str, str]:
    return {"exit_status": status, "submission": ""}


def _logprobs(choice: dict[str, Any]) -> list[dict[str, Any]] | None:
    content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if not content:
        return None
    return [{"token": t.get("token"), "logprob": t.get("logprob")} for t in content if isinstance(t, dict)]


def transcript(messages: list[dict[str, Any]]) -> str:
    """The readable agent log: every message, role first."""
    parts = []
    for m in messages:
        reply = (m.get("extra") or {}).get("model_reply")
        if reply is not None:  # a reply with no parseable action, answered by the format-error prompt below
            parts.append(f"--- assistant (no parseable action)\n{reply}")
        parts.append(f"--- {m.get('role')}\n{m.get('content') or ''}")
    return "\n".join(parts) + "\n"


class MiniAgent:
    name = "mini"

    def __init__(self, options: MiniOptions) -> None:
        self.options = options
        self.pool = EndpointPool(options.endpoints, auth_headers(options.api_key_env, options.headers))
        self._model: str | None = options.model
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> MiniAgent:
        try:
            return cls(MiniOptions.model_validate(options))
        except ValueError as exc:
            raise option_error("mini agent", exc) from None

    def model_name(self) -> str:
        with self._lock:
            if self._model is None:
                self._model = first_model(self.pool.urls[0], self.pool.headers)
            return self._model

    def stack(self) -> dict[str, Any]:
        """The serving engine(s) as the endpoints report them, for the run's stack."""
        try:
            infos = [probe(url, headers=self.pool.headers) for url in self.pool.urls]
            model = self.preflight(infos)
        except EndpointError as exc:
            raise UserError(f"cannot start the mini agent: {exc}") from None
        engines = sorted({i.engine or "unknown" for i in infos})
        versions = sorted({i.engine_version or "unknown" for i in infos})
        opts = self.options
        windows = sorted({i.context_window for i in infos if i.context_window})
        return {
            "engine": ", ".join(engines),
            "engine_version": ", ".join(versions),
            "model": model,
            "endpoints": len(self.pool.urls),
            "agent_loop": f"mini-swe-agent {MINI_VERSION}",
            "sampling": {
                "temperature": opts.temperature,
                "top_p": opts.top_p,
                "seed": opts.seed,
                "max_output_tokens": opts.max_output_tokens,
                "stop": opts.stop,
                **({"model_kwargs": opts.model_kwargs} if opts.model_kwargs else {}),
            },  # fmt: skip
            "actions": opts.actions,
            **({"agent_config": opts.agent_config} if opts.agent_config else {}),
            **({"context_window": windows[0] if len(windows) == 1 else windows} if windows else {}),
        }

    def preflight(self, infos: list[EngineInfo]) -> str:
        """Before the first container: the model is one each endpoint lists (else one line with the names they do),
        and one short completion answers. Returns the model's name."""
        model = self.model_name()
        for url, info in zip(self.pool.urls, infos, strict=True):
            if info.models and model not in info.models:
                shown = ", ".join(info.models[:10]) + (" ..." if len(info.models) > 10 else "")
                raise EndpointModelError(f"{url} does not serve model '{model}' (it lists: {shown}); check --model")
        payload = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
        for _ in self.pool.urls:  # least-outstanding: one call reaches each idle endpoint in turn
            try:
                self.pool.chat(payload, timeout=120.0)
            except ContextLengthError:
                pass  # it answered, and about the prompt
            except TimeoutError as exc:
                raise EndpointError(f"a one-token completion did not answer: {exc}") from None
        return model

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        start = time.monotonic()
        deadline = start + timeout
        opts = self.options
        attempt = getattr(sandbox, "attempt", None)
        seed = attempt_seed(opts.seed, task.task_id, attempt or 0) if opts.seed is not None else None
        model = ChatModel(self.pool, opts, self.model_name(), deadline, seed)
        env = SandboxEnvironment(sandbox, deadline, opts.command_timeout, opts.env)
        loop = DefaultAgent(
            model,
            env,
            system_template=opts.system_template,
            instance_template=opts.instance_template,
            step_limit=self.options.max_turns,
            cost_limit=0.0,
            wall_time_limit_seconds=max(int(timeout), 1),
            max_consecutive_format_errors=self.options.max_format_errors,
        )
        overflow: str | None = None
        try:
            loop.run(task.instruction)
        except ContextLengthError as exc:
            overflow = str(exc)
        status = (loop.messages[-1].get("extra") or {}).get("exit_status", "") if loop.messages else ""
        if overflow is not None:
            status = "ContextOverflow"
        result = self._result(loop, model, status, time.monotonic() - start)
        if status == "Submitted":
            return result
        if overflow is not None:
            raise ContextOverflowError(f"the server refused the prompt: {overflow[:300]}", result)
        if status == "RepeatedFormatError":
            raise FormatError(f"{self.options.max_format_errors} replies in a row had no parseable action", result)
        if status == "TimeExceeded":
            raise AgentTimeoutError(f"agent ran past its {timeout:g} s limit", result)
        if status in ("LimitsExceeded", "TokensExceeded"):
            what = "token" if status == "TokensExceeded" else "turn"
            raise AgentTimeoutError(f"agent spent its {what} budget ({model.tokens} tokens, {loop.n_calls} turns)",
                                    result)  # fmt: skip
        return result

    def _result(self, loop: DefaultAgent, model: ChatModel, status: str, duration: float) -> AgentResult:
        trajectory = loop.serialize({"info": {"exit_status": status, "calls": model.calls}})
        return AgentResult(
            exit_code=0 if status == "Submitted" else None,
            log=transcript(loop.messages),
            duration_s=round(duration, 3),
            turns=loop.n_calls,
            tokens=model.tokens,
            files={"trajectory.json": json.dumps(trajectory, indent=1, default=str)},
            info={
                "exit_status": status,
                "submitted": status == "Submitted",
                "prompt_tokens": model.prompt_tokens,
                "completion_tokens": model.completion_tokens,
                "model": model.config["model_name"],
                "seed": model.seed,
                "endpoints": sorted({c["endpoint"] for c in model.calls}),
            },
        )

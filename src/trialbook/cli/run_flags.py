"""The option groups of the commands that run trials (cli/groups.py): where trials run (WHERE, shared by run,
validate, grade, reverify and quickstart), the agent's flags (AgentFlags) and a run's settings (RunFlags)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from trialbook.agents.base import agent_options
from trialbook.agents.mini_config import DEFAULTS as MINI
from trialbook.agents.mini_config import config_options
from trialbook.cli.common import Replace, finite, writable_runs_dir
from trialbook.cli.groups import Group
from trialbook.errors import UserError
from trialbook.harness.placement.choice import Where
from trialbook.harness.run.paths import DEFAULT_RUNS_DIR


def _unit(param: typer.CallbackParam, value: float | None) -> float | None:
    """A finite number from 0 to 1 (Click's range would answer inf with its usage text, not one line)."""
    finite(param, value)
    if value is not None and not 0 <= value <= 1:
        raise UserError(f"{param.opts[0]} must be from 0 to 1, not {value:g}")
    return value


Multiplier = Annotated[
    float | None,
    typer.Option("--timeout-multiplier", help="Agent timeout = task timeout x this.", min=0.01, callback=finite),
]
ExecutorKind = Annotated[
    str, typer.Option("--executor", help="local (a thread pool on this machine) or ray (a Ray cluster's nodes).")
]
BackendKind = Annotated[
    str, typer.Option("--backend", help="Where sandboxes run: docker or podman (recorded in the run's stack).")
]
Engines = Annotated[
    list[str] | None,
    typer.Option("--engine", help="A Docker/Podman endpoint URL[=N trials at once] (repeatable): spread over them."),
]
RayAddress = Annotated[
    str | None, typer.Option("--ray-address", help="ray: the cluster's address [env RAY_ADDRESS; else auto].")
]
Concurrency = Annotated[int, typer.Option("--concurrency", min=1, help="Trials at once.")]
TaskIds = Annotated[
    list[str] | None, typer.Option("--task", help="Only this task id (repeatable, or comma-separated ids).")
]
RunsDir = Annotated[Path, typer.Option("--runs-dir", help="Where runs/<run>/<trial>/ go.", callback=writable_runs_dir)]

# where trials run: one object (harness/placement/choice.py) for every command that runs trials
WHERE = Group(
    Where, executor=ExecutorKind, backend=BackendKind, engines=Engines, ray_address=RayAddress, concurrency=Concurrency
)


@dataclass
class AgentFlags:
    """The agent a run runs and the flags of `mini` (and the agents that share its options: docs/agents.md)."""

    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="oracle, nop, mini (an LLM), mini-swe-agent, codex, claude-code, opencode, aider (docs/agents.md), "
            "or your own: module:Class or file.py:Class.",
        ),
    ] = None
    agent_cmd: Annotated[
        str | None, typer.Option("--agent-cmd", help="A command run as the agent in the sandbox (bash -c).")
    ] = None
    endpoint: Annotated[
        list[str] | None, typer.Option("--endpoint", help="mini: OpenAI-compatible URL (repeatable).")
    ] = None
    model: Annotated[str | None, typer.Option("--model", help="mini: model name (default: the server's first).")] = None
    api_key_env: Annotated[
        str | None,
        typer.Option(
            "--api-key-env",
            help="mini: the environment variable holding the endpoint's API key (sent as "
            "Bearer; never stored) [default: OPENAI_API_KEY where set].",
        ),
    ] = None
    header: Annotated[
        list[str] | None,
        typer.Option(
            "--header",
            help="mini: NAME=VALUE sent on every request (repeatable; stored); a credential's header "
            "(X-Api-Key, ...) as NAME=env:VAR or NAME=file:PATH, read at each start, never stored.",
        ),
    ] = None
    agent_config: Annotated[
        Path | None,
        typer.Option(
            "--agent-config",
            help="mini: a config file in mini-swe-agent's YAML shape (prompts, sampling, "
            "limits; e.g. its swebench.yaml).",
        ),
    ] = None
    config_set: Annotated[
        list[str] | None,
        typer.Option(
            "-c",
            "--config",
            help="mini: KEY=VALUE over the config: model.model_kwargs.temperature=0.6, "
            "agent.step_limit=100, or an option's name (repeatable).",
        ),
    ] = None
    temperature: Annotated[
        float | None,
        typer.Option(
            "--temperature", min=0, callback=finite, help=f"mini: sampling temperature [default: {MINI.temperature:g}]."
        ),
    ] = None
    top_p: Annotated[
        float | None,
        typer.Option("--top-p", callback=_unit, help=f"mini: nucleus sampling, 0 to 1 [default: {MINI.top_p:g}]."),
    ] = None
    seed: Annotated[
        int | None,
        typer.Option(
            "--seed",
            help=f"mini: the run's seed; each (task, attempt) samples with its own, derived from it "
            f"[default: {MINI.seed}].",
        ),
    ] = None
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, help=f"mini: model calls per trial [default: {MINI.max_turns}].")
    ] = None
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="mini: prompt + completion tokens per trial [default: no limit]."),
    ] = None
    max_output: Annotated[
        int | None,
        typer.Option("--max-output-tokens", min=1, help=f"mini: tokens per reply [default: {MINI.max_output_tokens}]."),
    ] = None
    gateway: Annotated[
        bool,
        typer.Option(
            "--gateway",
            help="The model gateway in front of --endpoint: every trial keeps its turns' exact token ids "
            "(tokens.json, for train export-trajectories) when the engine returns none.",
        ),
    ] = False
    chat_template: Annotated[
        Path | None,
        typer.Option("--chat-template", help="--gateway before llama-cpp-python's server: the served model's .gguf."),
    ] = None

    def name(self) -> str:
        """The agent a run records: `--agent` (a file path made absolute), or `cmd` for `--agent-cmd`."""
        from trialbook.agents.registry import agent_spec

        if self.agent_cmd is not None:
            if self.agent not in (None, "cmd"):
                raise UserError("give --agent or --agent-cmd, not both")
            return "cmd"
        if self.agent is None:
            raise UserError(
                "--agent NAME (oracle, nop, mini, module:Class, file.py:Class) or --agent-cmd 'CMD' is needed"
            )
        return agent_spec(self.agent)

    def options(self, agent: str) -> dict[str, object]:
        """The agent's options: the config file's and -c's, then the flags given (a flag wins), then the gateway's."""
        flags = {
            "endpoints": self.endpoint, "model": self.model, "api_key_env": self.api_key_env,
            "headers": _headers(self.header), "temperature": self.temperature, "top_p": self.top_p, "seed": self.seed,
            "max_turns": self.max_turns, "max_tokens": self.max_tokens, "max_output_tokens": self.max_output,
            "command": self.agent_cmd,
        }  # fmt: skip
        given = {k: v for k, v in flags.items() if v not in (None, [], ())}
        chosen = agent_options(agent, **{**config_options(self.agent_config, self.config_set), **given})
        return chosen | _gateway(self.gateway, self.chat_template)


def _gateway(on: bool, chat_template: Path | None) -> dict[str, object]:
    """The agent option `run --gateway` adds (rl/gateway_agent.py), with the model file whose template it renders."""
    if chat_template is not None and not on:
        raise UserError("--chat-template goes with --gateway")
    if chat_template is not None and not chat_template.is_file():
        raise UserError(f"--chat-template: no such file {chat_template}")
    return {"gateway": {"chat_template": str(chat_template.resolve()) if chat_template else None}} if on else {}


def _headers(given: list[str] | None) -> dict[str, str] | None:
    out: dict[str, str] = {}
    for item in given or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UserError(f"--header {item}: expected NAME=VALUE")
        out[name.strip()] = value
    return out or None


@dataclass
class RunFlags:
    """How `run` runs its trials (RunConfig, but where they run: WHERE)."""

    attempts: Annotated[int, typer.Option("--attempts", min=1, help="Attempts per task.")] = 1
    timeout_multiplier: Multiplier = None
    deadline: Annotated[
        float | None,
        typer.Option(
            "--deadline", help="Minutes; then stragglers are stopped (incomplete).", min=0.01, callback=finite
        ),
    ] = None
    retries: Annotated[int, typer.Option("--retries", min=0, help="Retries of infra failures.")] = 2
    stop_after_errors: Annotated[
        int,
        typer.Option(
            "--stop-after-errors",
            min=0,
            help="Stop the run when this many trials in a row end with the same infrastructure error (0: never).",
        ),
    ] = 5
    progress_every: Annotated[
        float,
        typer.Option(
            "--progress-every",
            min=0.1,
            callback=finite,
            envvar="TRIALBOOK_PROGRESS_EVERY",
            help="Seconds between progress lines when stderr is not a terminal (a log: nohup, Slurm, CI) "
            "[env TRIALBOOK_PROGRESS_EVERY].",
        ),
    ] = 30.0
    warm_pool: Annotated[
        bool, typer.Option("--warm-pool/--no-warm-pool", help="Start the next containers ahead of need.")
    ] = True
    runtime: Annotated[
        str, typer.Option("--runtime", help="Containers' OCI runtime: auto (crun if the daemon has it), default, NAME.")
    ] = "auto"
    tasks: TaskIds = None
    runs_dir: RunsDir = DEFAULT_RUNS_DIR
    hack_policy: Annotated[
        str,
        typer.Option(
            "--hack-policy",
            help="A reward-hacking signature (hack_*) on a rewarded trial: zero (its training reward 0) or tag (only).",
        ),
    ] = "zero"


@dataclass
class GradeFlags:
    """How `grade` and `reverify` run their new run (beyond where: WHERE)."""

    timeout_multiplier: Multiplier = None
    runs_dir: RunsDir = DEFAULT_RUNS_DIR
    replace: Replace = False

    def given(self) -> dict[str, object]:
        """RunConfig's fields these set."""
        return {"timeout_multiplier": self.timeout_multiplier or 1.0, "runs_dir": str(self.runs_dir.resolve())}


AGENT_FLAGS = Group(AgentFlags)
GRADE_FLAGS = Group(GradeFlags)
RUN_FLAGS = Group(RunFlags)

"""`trialbook run --gateway`: the model gateway (rl/gateway.py) in front of the engine for an eval run's agent, so
every trial keeps the exact token ids of each turn (`tokens.json`, what `train export-trajectories` reads) even
when the engine returns none (llama.cpp's server, llama-cpp-python's with the model's chat template).

The agents registry builds it for a run whose agent options carry `gateway` (agents/registry.py): one gateway per
trial process, started at the first trial (so a Ray node runs its own), and per trial a fresh agent pointed at the
gateway's per-trial URL, as `Rollouts(gateway=...)` does. An agent CLI (codex, claude-code, opencode, aider) already
runs its own gateway per trial and records the same file: it is used as it is, with `--chat-template` passed on.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trialbook.agents.base import AgentResult, AgentStopped
from trialbook.agents.endpoints import EndpointError
from trialbook.agents.registry import agent_class, get_agent
from trialbook.errors import UserError
from trialbook.rl.gateway import Call, Gateway
from trialbook.trajectory import ARTIFACT, Trajectory

if TYPE_CHECKING:
    from trialbook.sandbox import Box
    from trialbook.tasks import TaskSpec

OPTION = "gateway"  # the agent option: {"chat_template": "/abs/model.gguf" or None}


class GatewayAgent:
    """`agent` (a registry name or import path) with the model gateway between it and its one endpoint."""

    def __init__(self, agent: str, options: dict[str, Any], gateway: dict[str, Any]) -> None:
        urls = list(options.get("endpoints") or [])
        if len(urls) != 1:
            raise UserError("--gateway fronts one model endpoint: give exactly one --endpoint")
        if options.get("api_key_env") or options.get("headers"):
            raise UserError("--gateway does not pass --api-key-env or --header on to the engine yet: run without it")
        self.agent, self.options, self.engine_url = agent, options, urls[0]
        self.template = gateway.get("chat_template")
        self.probe = get_agent(agent, options)  # the agent as it is: its options checked, its preflight
        if not callable(getattr(self.probe, "model_name", None)):
            raise UserError(f"--gateway: agent '{agent}' takes no model endpoint")
        self.name = self.probe.name
        self._gateway: Gateway | None = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # to a Ray node: it starts its own gateway there
        return {**self.__dict__, "_gateway": None, "_lock": None}

    def __setstate__(self, saved: dict[str, Any]) -> None:
        self.__dict__.update({**saved, "_lock": threading.Lock()})

    def model_name(self) -> str:
        return str(self.probe.model_name())  # type: ignore[attr-defined]

    def stack(self) -> dict[str, Any]:
        """The agent's own stack (its preflight against the engine) and the gateway's engine adapter."""
        describe = getattr(self.probe, "stack", None)
        stack = dict(describe()) if callable(describe) else {}
        gw = self.gateway()
        return {**stack, "gateway": {"engine": gw.engine.name, "engine_url": gw.engine_url}}

    def gateway(self) -> Gateway:
        """This process's gateway, started at the first call (the engine asked what it is, then)."""
        with self._lock:
            if self._gateway is None:
                template = None
                if self.template:
                    from trialbook.rl.engines import template_of

                    template = template_of(Path(self.template))
                try:
                    self._gateway = Gateway(self.engine_url, chat_template=template).start()
                except EndpointError as exc:  # e.g. a 401: the gateway asks the engine without the agent's key
                    raise UserError(f"--gateway: {exc}") from None
                except UserError as exc:
                    if "chat_template" in str(exc):
                        raise UserError(
                            f"--gateway: the engine at {self.engine_url} (llama-cpp-python) returns no token ids: "
                            "give --chat-template MODEL.gguf (the served model's file)"
                        ) from None
                    raise
            return self._gateway

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        gw = self.gateway()
        key = gw.new_key()
        inner = get_agent(self.agent, {**self.options, "endpoints": [gw.url_for(key)], "model": self.model_name()})
        try:
            result = inner.run(sandbox, task, timeout)
        except AgentStopped as stop:
            _attach(stop.result, gw.take(key))
            raise
        except BaseException:
            gw.take(key)
            raise
        return _attach(result, gw.take(key))


def _attach(result: AgentResult, calls: list[Call]) -> AgentResult:
    """The trial's turns as token ids (the artifact `tokens.json`) and their summary in the agent's info."""
    traj = Trajectory.from_calls(calls)
    if traj.turns:
        result.files[ARTIFACT] = traj.dumps()
    policy = [c for c in calls if c.role == "policy"]
    result.info[OPTION] = {"calls": len(calls), "turns": len(policy), "exact": traj.exact,
                           "broken_prefix": traj.broken, "sources": sorted({c.source for c in calls})}  # fmt: skip
    return result


def through_gateway(agent: str, options: dict[str, Any], gateway: dict[str, Any]) -> Any:
    """`agent` behind the gateway; an agent CLI that runs its own (it has `sandbox_mounts`) as it is, given the chat
    template its own gateway needs before an engine that returns no ids."""
    if callable(getattr(agent_class(agent), "sandbox_mounts", None)):
        template = gateway.get("chat_template")
        return get_agent(agent, {**options, "chat_template": template} if template else options)
    return GatewayAgent(agent, options, gateway)

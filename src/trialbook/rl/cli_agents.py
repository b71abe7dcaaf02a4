"""`--agent codex | claude-code | opencode | aider`: an agent CLI from the host cache (`trialbook agents install NAME`,
agents/installed.py) run headless inside the trial's sandbox, its model reached through a gateway that records
every call with its token ids, and nothing else reached at all.

The model-only network: the sandbox keeps the network its task gives it (none, by default: not even an interface
past loopback). Two folders are bound into it (`sandbox_mounts`, read by the harness when it starts the agent's
container): the agent's install folder, read-only, at /opt/trialbook-agent, and a per-trial folder at
/run/trialbook-model holding the Unix socket of a gateway this agent starts in front of `--endpoint` (rl/gateway.py
`start_unix`). A relay started in the sandbox (python3, which the task's image must have) listens on 127.0.0.1
and passes each connection to that socket, so the CLI's base URL is `http://127.0.0.1:PORT/t/<trial>/v1`. A
package index, a code host, the host's ports: nothing of them has a route from the sandbox.

Each trial keeps the CLI's own event stream as its agent log and the gateway's record as `tokens.json` (trialbook/
trajectory.py: the policy's turns; a side call such as opencode's title is kept out).
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from trialbook.agents.base import AgentResult, AgentTimeoutError, option_error
from trialbook.agents.endpoints import EndpointError, first_model, normalize, probe
from trialbook.agents.installed import agent, binary, folder, headless
from trialbook.errors import UserError
from trialbook.outcomes import ErrorKind
from trialbook.rl.engines import template_of
from trialbook.rl.gateway import Gateway
from trialbook.sandbox import Box
from trialbook.tasks import TaskSpec
from trialbook.trajectory import ARTIFACT, Trajectory

AGENT_DIR = "/opt/trialbook-agent"
MODEL_DIR = "/run/trialbook-model"
RELAY_PORT = 18080
HOME = "/tmp/trialbook-agent-home"
RELAY = r"""
import socket, sys, threading
port, path = int(sys.argv[1]), sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
def pump(a, b):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect(path)
    except OSError:
        c.close()
        return
    t = threading.Thread(target=pump, args=(u, c), daemon=True)
    t.start()
    pump(c, u)
    t.join()
    c.close()
    u.close()
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""
PYTHON_VERSION = "import sys; print('%d.%d' % sys.version_info[:2])"
START_RELAY = (
    f"setsid python3 {MODEL_DIR}/relay.py {RELAY_PORT} {MODEL_DIR}/gateway.sock </dev/null >/dev/null 2>&1 & "
    'for i in $(seq 50); do python3 -c \'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])),'
    f" 1)' {RELAY_PORT} 2>/dev/null && exit 0; sleep 0.1; done; echo 'the model relay did not start' >&2; exit 1"
)


class AgentImageError(Exception):
    """The task's image cannot run this agent (no python3 for the relay; aider: not the Python its install is for):
    the trial ends infra_error, not retried, as an unusable task folder does (outcomes.POLICY)."""

    kind = ErrorKind.INVALID_TASK


class CliOptions(BaseModel):
    endpoints: list[str] = Field(default_factory=list)  # the engine (or a gateway) the agent's model is at
    model: str | None = None  # default: the first model the endpoint lists
    # the served model's .gguf, for an engine that returns no token ids (llama-cpp-python's server): `run --gateway
    # --chat-template FILE` gives it (rl/gateway_agent.py), and the agent's own gateway renders the prompts with it
    chat_template: str | None = None


class InstalledCliAgent:
    """One agent CLI of agents/installed.py, in the trial's sandbox (subclasses name which)."""

    name = ""

    def __init__(self, options: CliOptions) -> None:
        if not options.endpoints:
            raise UserError(f"the {self.name} agent needs the model's URL: --endpoint URL")
        if binary(self.name) is None:
            raise UserError(f"{self.name} is not installed: trialbook agents install {self.name}")
        self.url = normalize(options.endpoints[0])
        self._model = options.model
        self._template_file = options.chat_template
        self._template: tuple[str, str, str] | None = None
        self._folders: dict[str, Path] = {}  # trial -> its socket folder (made by sandbox_mounts, ended by run)
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> InstalledCliAgent:
        try:
            return cls(CliOptions.model_validate(options))
        except ValueError as exc:
            raise option_error(cls.name, exc) from None

    def model_name(self) -> str:
        if self._model is None:
            self._model = first_model(self.url)
        return self._model

    def _gateway(self) -> Gateway:
        """The gateway this agent puts in front of its endpoint (not started): one line when it cannot read ids."""
        if self._template_file and self._template is None:
            self._template = template_of(Path(self._template_file))
        try:
            return Gateway(self.url, chat_template=self._template, side_models=(agent(self.name).side_model or "-",))
        except UserError as exc:
            if "chat_template" not in str(exc):
                raise
            raise UserError(
                f"the {self.name} agent: the engine at {self.url} (llama-cpp-python) returns no token ids: give "
                "--gateway --chat-template MODEL.gguf (the served model's file)"
            ) from None

    def stack(self) -> dict[str, Any]:
        try:
            info = probe(self.url)
        except EndpointError as exc:
            raise UserError(f"cannot start the {self.name} agent: {exc}") from None
        self._gateway()  # before any trial: an engine whose ids it cannot record is one line
        pinned = agent(self.name)
        loop = f"{pinned.package} {pinned.version}"
        return {"engine": info.engine or "unknown", "engine_version": info.engine_version or "unknown",
                "model": self.model_name(), "endpoints": 1, "agent_loop": loop}  # fmt: skip

    def sandbox_mounts(self, trial: str) -> list[tuple[str, str, bool]]:
        """What the harness binds into this trial's agent container: the install folder, the model socket's."""
        sockets = Path(tempfile.mkdtemp(prefix="trialbook-model-"))
        sockets.chmod(0o755)
        (sockets / "relay.py").write_text(RELAY)
        with self._lock:
            self._folders[trial] = sockets
        return [(str(folder(self.name)), AGENT_DIR, True), (str(sockets), MODEL_DIR, False)]

    def _check_python(self, sandbox: Box, task: TaskSpec) -> None:
        """A Python agent (aider) runs on the sandbox's python3, which must be the version its wheels are for."""
        want = agent(self.name).python
        if not want:
            return
        got = sandbox.exec(["python3", "-c", PYTHON_VERSION], timeout=30).output.strip()
        if got != want:
            raise AgentImageError(
                f"{self.name} runs on Python {want} (its install's wheels) and task {task.task_id}'s image has "
                f"python3 {got}"
            )

    def run(self, sandbox: Box, task: TaskSpec, timeout: float) -> AgentResult:
        start = time.monotonic()
        with self._lock:
            sockets = self._folders.pop(sandbox.name, None)
        if sockets is None:
            raise UserError(f"the {self.name} agent runs only in a sandbox the harness started with its mounts")
        model = self.model_name()
        try:
            with self._gateway() as gw:
                gw.start_unix(sockets / "gateway.sock", trial=sandbox.name)
                relay = sandbox.exec(["bash", "-c", f"mkdir -p {HOME} && {START_RELAY}"], timeout=30)
                if relay.exit_code != 0:
                    raise AgentImageError(f"{self.name}: {relay.output.strip()[-300:]} (the image needs python3)")
                self._check_python(sandbox, task)
                url = f"http://127.0.0.1:{RELAY_PORT}/t/{sandbox.name}/v1"
                workdir = task.workdir or "/"
                argv, env = headless(self.name, url, model, task.instruction, workdir, HOME,
                                     exe=f"{AGENT_DIR}/{agent(self.name).binary}")  # fmt: skip
                left = max(timeout - (time.monotonic() - start), 1.0)
                res = sandbox.exec(argv, timeout=left, env=env, workdir=workdir)
                calls = gw.take(sandbox.name)
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
        traj = Trajectory.from_calls(calls)
        policy = [c for c in calls if c.role == "policy"]
        result = AgentResult(
            exit_code=res.exit_code,
            log=res.output,
            duration_s=round(time.monotonic() - start, 3),
            turns=len(policy),
            tokens=sum(len(c.prompt_ids) + len(c.completion_ids) for c in policy),
            files={ARTIFACT: traj.dumps()} if traj.turns else {},
            info={
                "calls": len(calls),
                "side_calls": len(calls) - len(policy),
                "exact": traj.exact,
                "broken_prefix": traj.broken,
                "api": agent(self.name).api,
                "model": model,
            },  # fmt: skip
        )
        if res.timed_out:
            raise AgentTimeoutError(f"{self.name} ran past its {timeout:g} s limit", result)
        return result


class CodexAgent(InstalledCliAgent):
    name = "codex"


class ClaudeCodeAgent(InstalledCliAgent):
    name = "claude-code"


class OpencodeAgent(InstalledCliAgent):
    name = "opencode"


class AiderAgent(InstalledCliAgent):
    name = "aider"

"""Agent CLIs installed once into a host cache at a pinned version (`trialbook agents install NAME`), and how each
runs headless pointed at a model URL (the gateway's per-trial URL), measured with these versions.

Codex, Claude Code and opencode are native binaries from npm (no Node needed where they run); aider is a Python
package installed from PyPI with its dependencies into a folder of its own (`pip install --target`, CPython 3.11
wheels only: it runs on the sandbox's own `python3`, which must be 3.11). The cache is `$TRIALBOOK_AGENTS_DIR` or
`~/.cache/trialbook/agents`, one folder per name and version (`codex-0.171.0/`). Which wire API each speaks, and so
which one the gateway records for it: Codex the Responses API, Claude Code Anthropic's Messages API (it calls
`/v1/messages?beta=true` under the base URL's path), opencode and aider chat completions. Side calls go to the model
named `side_model` so the gateway tags them `side` (opencode's title, Claude Code's small fast model, aider's weak
model: its commit messages and history summaries).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from trialbook.errors import UserError


@dataclass(frozen=True)
class CliAgent:
    name: str
    package: str  # the npm package (the PyPI distribution where `python` is set)
    version: str  # pinned: the version the flags below were measured with
    binary: str  # the native binary under the install folder (a Python agent: its package's __main__.py)
    api: str  # the wire API it speaks: responses | messages | chat
    side_model: str = ""  # the model name its side calls ask for (the gateway's side_models)
    python: str = ""  # a Python agent: the CPython version its wheels are for, the one it runs on; "": npm binary


CLI_AGENTS = {
    "codex": CliAgent("codex", "@openai/codex", "0.171.0",
                      "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "responses"),
    "claude-code": CliAgent("claude-code", "@anthropic-ai/claude-code", "2.1.197",
                            "node_modules/@anthropic-ai/claude-code-linux-x64/claude", "messages", "side"),
    "opencode": CliAgent("opencode", "opencode-ai", "1.18.33", "node_modules/opencode-linux-x64/bin/opencode", "chat",
                         "side"),
    "aider": CliAgent("aider", "aider-chat", "0.86.2", "aider/__main__.py", "chat", "side", python="3.11"),
}  # fmt: skip


def cache_dir() -> Path:
    return Path(os.environ.get("TRIALBOOK_AGENTS_DIR") or Path.home() / ".cache" / "trialbook" / "agents")


def agent(name: str) -> CliAgent:
    if name not in CLI_AGENTS:
        raise UserError(f"no installable agent {name!r} (known: {', '.join(sorted(CLI_AGENTS))})")
    return CLI_AGENTS[name]


def folder(name: str) -> Path:
    a = agent(name)
    return cache_dir() / f"{a.name}-{a.version}"


def binary(name: str) -> Path | None:
    """The cached binary, or None when `trialbook agents install NAME` has not run."""
    path = folder(name) / agent(name).binary
    runnable = bool(agent(name).python) or os.access(path, os.X_OK)  # a Python agent's __main__.py is run by python
    return path if path.is_file() and runnable else None


def _install_command(a: CliAgent, scratch: Path) -> list[str]:
    if a.python:  # the agent and its dependencies, CPython wheels for its version only: no build step anywhere
        return [sys.executable, "-m", "pip", "install", "--quiet", "--no-input", "--no-warn-conflicts",
                "--disable-pip-version-check", "--target", str(scratch), "--python-version", a.python,
                "--only-binary=:all:", f"{a.package}=={a.version}"]  # fmt: skip
    npm = shutil.which("npm")
    if npm is None:
        raise UserError("installing an agent needs npm (Node.js) on this machine")
    return [npm, "install", "--no-audit", "--no-fund", "--prefix", str(scratch), f"{a.package}@{a.version}"]


def install(name: str, timeout: float = 900.0) -> Path:
    """Install NAME at its pinned version into the cache (npm, or pip for a Python agent); the binary's path.
    Installed already: as is."""
    a = agent(name)
    found = binary(name)
    if found is not None:
        return found
    where = folder(name)
    where.parent.mkdir(parents=True, exist_ok=True)
    tool = "pip" if a.python else "npm"
    # into a scratch folder first, renamed when complete: a reader (a test, a trial) sees all of it or none
    scratch = Path(tempfile.mkdtemp(prefix=f".{where.name}-", dir=where.parent))
    try:
        cmd = _install_command(a, scratch)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not (scratch / a.binary).is_file():
            lines = [ln for ln in done.stderr.strip().splitlines() if not ln.startswith("WARNING")]
            last = (lines or ["no output"])[-1]
            raise UserError(f"{tool} install {a.package}@{a.version} failed: {last}")
        shutil.rmtree(where, ignore_errors=True)
        scratch.rename(where)
    except subprocess.TimeoutExpired:
        raise UserError(f"{tool} install {a.package}@{a.version} ran past {timeout:g} s") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    found = binary(name)
    if found is None:
        raise UserError(f"{name}: {where / a.binary} is not an executable file after the install")
    return found


def headless(
    name: str, url: str, model: str, instruction: str, workdir: str, home: str, exe: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """(argv, environment additions) that run NAME once, non-interactively, on `instruction` in `workdir`, with
    its model at `url` (an OpenAI-style base URL ending in /v1: the gateway's `url_for(trial)`), its state in
    `home`, and no approval prompts (the sandbox is the boundary). `exe`: where the binary is (default: the cache)."""
    a = agent(name)
    exe = exe or str(binary(name) or folder(name) / a.binary)
    if name == "codex":
        provider = ["-c", "model_provider=trialbook", "-c", "model_providers.trialbook.name=trialbook",
                    "-c", f"model_providers.trialbook.base_url={url}", "-c",
                    "model_providers.trialbook.wire_api=responses"]  # fmt: skip
        argv = [exe, "exec", "--json", "--dangerously-bypass-approvals-and-sandbox", "--skip-git-repo-check",
                "-C", workdir, *provider, "-m", model, instruction]  # fmt: skip
        return argv, {"CODEX_HOME": home}
    if name == "claude-code":
        argv = [exe, "-p", instruction, "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--model", model]  # fmt: skip
        env = {"HOME": home, "ANTHROPIC_BASE_URL": url.removesuffix("/v1"), "ANTHROPIC_API_KEY": "trialbook",
               "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": a.side_model,
               "ANTHROPIC_DEFAULT_HAIKU_MODEL": a.side_model, "IS_SANDBOX": "1", "DISABLE_TELEMETRY": "1",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip
        return argv, env
    if name == "aider":
        return _aider(a, url, model, instruction, home, exe)
    config = {"provider": {"trialbook": {"npm": "@ai-sdk/openai-compatible", "name": "trialbook",
                                         "options": {"baseURL": url, "apiKey": "trialbook"},
                                         "models": {model: {"name": model, "tool_call": True},
                                                    a.side_model: {"name": a.side_model}}}},
              "model": f"trialbook/{model}", "small_model": f"trialbook/{a.side_model}", "autoupdate": False,
              "share": "disabled"}  # fmt: skip
    # opencode works in $PWD, not in its process's working directory
    env = {"HOME": home, "XDG_CONFIG_HOME": f"{home}/.config", "XDG_DATA_HOME": f"{home}/.local/share",
           "XDG_CACHE_HOME": f"{home}/.cache", "PWD": workdir}  # fmt: skip
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
    return [exe, "run", "--format", "json", instruction], env


def _aider(
    a: CliAgent, url: str, model: str, instruction: str, home: str, exe: str
) -> tuple[list[str], dict[str, str]]:
    """aider, one message, no questions (`--yes-always`), on the python3 of where it runs with its install folder
    on the path; nothing of its own left in the repository (no commits, no .gitignore entry, its histories in
    `home`), so the diff graded is the edit alone; its weak model (commit messages, summaries) is the side model."""
    site = exe.removesuffix("/" + a.binary)
    argv = ["python3", "-m", "aider", "--model", f"openai/{model}", "--weak-model", f"openai/{a.side_model}",
            "--openai-api-base", url, "--openai-api-key", "trialbook", "--edit-format", "diff", "--yes-always",
            "--no-auto-commits", "--no-dirty-commits", "--no-gitignore", "--no-auto-lint", "--no-check-update",
            "--analytics-disable", "--no-show-model-warnings", "--no-pretty", "--no-fancy-input",
            "--map-tokens", "0", "--chat-history-file", f"{home}/aider.chat.md", "--input-history-file",
            f"{home}/aider.input", "--message", instruction]  # fmt: skip
    env = {"HOME": home, "PYTHONPATH": site,
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "AIDER_CHECK_UPDATE": "false"}  # fmt: skip
    return argv, env

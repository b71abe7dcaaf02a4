"""Trial sandboxes on Podman (backend "podman"): daemonless, rootless where the host allows.

Podman serves Docker's API on a socket (`podman system service`, a process of this user that exits after
SERVICE_IDLE_S without a call: no system daemon); everything of sandbox/docker.py then works as it is: labels,
limits, no network stack, the command channel, copies in and out, `diff`, `clean`. What differs is here:
- the socket: $TRIALBOOK_PODMAN_URL, else the service of this user that answers ($XDG_RUNTIME_DIR/podman/podman.sock
  rootless, /run/podman/podman.sock as root), else one started for this run;
- resource limits (ulimits): Podman gives a root container RLIMIT_NOFILE / RLIMIT_NPROC of its own (1048576 and
  4194304), above the hard limits of a process in a container such as this machine's, and crun then refuses every
  start ("setrlimit RLIMIT_NOFILE: Operation not permitted"); a container gets this process's own limits, as
  Docker's get dockerd's;
- images live in Podman's store, not Docker's: a task's image that Podman lacks is copied from a local Docker
  daemon when that has it (`docker save | podman load`; a Dockerfile's FROM image too), else built or pulled by
  Podman; a local image's name gets Podman's `localhost/` prefix, which Podman's short names resolve.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from docker.errors import APIError, DockerException, NotFound
from requests.exceptions import RequestException

from trialbook.sandbox.backend import Capabilities
from trialbook.sandbox.box import DaemonError, ImageBuildError
from trialbook.sandbox.docker import DockerEngine

SERVICE_IDLE_S = 600  # a service this backend started exits after this long without a call
STOPPING_WAIT_S = 30  # how long a removal waits for a stopping container before it asks again
NPROC_CAP = 32768  # crun refused 65536 on this machine (hard limit 96555): a container's RLIMIT_NPROC at most
_started: dict[str, subprocess.Popen[bytes]] = {}
_start_lock = threading.Lock()


def unavailable_help(why: str) -> str:
    return (
        f"Podman does not answer ({why}). Install it (Debian/Ubuntu: `apt-get install podman`), check that `podman "
        "info` works for this user, or point TRIALBOOK_PODMAN_URL at a running `podman system service` socket."
    )


def _sockets() -> list[str]:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    found = [f"{runtime}/podman/podman.sock"] if runtime and os.getuid() != 0 else []
    return [*found, "/run/podman/podman.sock"] if os.getuid() == 0 else found or [f"/tmp/podman-{os.getuid()}.sock"]


def _answers(path: str) -> bool:
    """Whether an API service answers its ping on the socket at `path`."""
    if not os.path.exists(path):
        return False
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: podman\r\n\r\n")
            return b" 200 " in s.recv(64)
    except OSError:
        return False


def service_url() -> str:
    """The socket of a Podman API service of this user: one that answers, else one started now (it exits by itself
    after SERVICE_IDLE_S idle)."""
    if url := os.environ.get("TRIALBOOK_PODMAN_URL"):
        return url
    paths = _sockets()
    for path in paths:
        if _answers(path):
            return f"unix://{path}"
    podman = shutil.which("podman")
    if podman is None:
        raise DaemonError("no podman on PATH")
    path = paths[0]
    with _start_lock:
        if path not in _started or _started[path].poll() is not None:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            _started[path] = subprocess.Popen(
                [podman, "system", "service", f"--time={SERVICE_IDLE_S}", f"unix://{path}"],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if _answers(path):
            return f"unix://{path}"
        if _started[path].poll() is not None:
            raise DaemonError(f"`podman system service` exited with status {_started[path].returncode}")
        time.sleep(0.1)
    raise DaemonError(f"`podman system service` did not answer on {path} within 20 s")


def _ulimits() -> list[dict[str, Any]]:
    out = []
    for name, which, cap in (("nofile", resource.RLIMIT_NOFILE, None), ("nproc", resource.RLIMIT_NPROC, NPROC_CAP)):
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            hard = min(hard, cap) if cap else hard
            out.append(
                {"Name": name, "Soft": min(soft, hard) if soft != resource.RLIM_INFINITY else hard, "Hard": hard}
            )
    return out


class PodmanEngine(DockerEngine):
    """DockerEngine on Podman's Docker-compatible API (see the module's docstring)."""

    name = "podman"
    capabilities = Capabilities(
        host_layer=True, warm_pool=True, runtimes=True, notes=("daemonless: podman system service",)
    )
    unavailable_help = staticmethod(unavailable_help)

    def __init__(self, pool: int = 10, url: str | None = None) -> None:
        super().__init__(pool, url or service_url())
        self.host_config_extra = (("ulimits", _ulimits()),)

    def version(self) -> str:
        return f"podman {super().version()}"

    def remove_container(self, container_id: str) -> None:
        """Podman refuses a forced removal while the container is stopping (its channel just closed, so its PID 1 is
        exiting: "cannot remove container ... as it is stopping"); once it has stopped, the removal goes through."""
        try:
            super().remove_container(container_id)
        except NotFound:
            raise
        except (APIError, DockerException, RequestException):
            with contextlib.suppress(APIError, DockerException, RequestException):
                self.client.api.wait(container_id, timeout=STOPPING_WAIT_S)
            super().remove_container(container_id)

    def ensure_image(
        self, key: str, image: str | None, context: Path, env_hash: str, run: str, network: bool,
        labels: dict[str, str] | None = None,
    ) -> tuple[str, str]:  # fmt: skip
        if image is not None:
            self._from_docker(image)
        else:
            for base in _from_images(context / "Dockerfile"):
                self._from_docker(base)
        return super().ensure_image(key, image, context, env_hash, run, network, labels)

    def _from_docker(self, ref: str) -> None:
        """Copy `ref` from a local Docker daemon into Podman's store when Podman lacks it and Docker has it."""
        with self._lock_for(f"load:{ref}"):
            if self.image_id(ref) is not None or shutil.which("docker") is None:
                return
            have = subprocess.run(["docker", "image", "inspect", ref], capture_output=True)
            if have.returncode != 0:
                return
            save = subprocess.Popen(["docker", "save", ref], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            load = subprocess.run(["podman", "load"], stdin=save.stdout, capture_output=True, text=True)
            save.wait()
            if load.returncode != 0 or save.returncode != 0:
                why = (load.stderr.strip().splitlines() or ["?"])[-1]
                raise ImageBuildError(f"could not copy image {ref} from Docker into Podman: {why}")


def _from_images(dockerfile: Path) -> list[str]:
    """The images a Dockerfile's FROM lines name (not its own stages, not `scratch`)."""
    try:
        lines = dockerfile.read_text(errors="replace").splitlines()
    except OSError:
        return []
    stages: set[str] = set()
    out = []
    for line in lines:
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "FROM":
            ref = next((w for w in words[1:] if not w.startswith("--")), "")
            if ref and ref.lower() != "scratch" and ref not in stages and "$" not in ref:
                out.append(ref)
            if len(words) >= 4 and words[-2].upper() == "AS":
                stages.add(words[-1])
    return out

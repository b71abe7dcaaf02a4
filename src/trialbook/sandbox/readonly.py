"""A read-only look inside an image (verify/leak_scan.py): one container of it with no network, as root, kept alive
by a sleep, its root filesystem read-only but for a small tmpfs. Docker's API (Docker and Podman) has it; a backend
without a Docker-compatible client answers Unsupported."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from docker.errors import APIError, DockerException

from trialbook.sandbox.backend import Backend, Unsupported

Look = Callable[[str, dict[str, str]], bytes]  # look(script, env): the script's stdout (its stderr dropped)


@contextlib.contextmanager
def read_only(backend: Backend, image: str, labels: dict[str, str], tmpfs: str, tmpfs_mb: int = 64) -> Iterator[Look]:
    """A container of `image` as the module's docstring says, removed whatever happens; yields `look`."""
    client = getattr(backend, "client", None)
    if client is None:
        raise Unsupported(f"the {backend.name} backend cannot start a read-only container to look inside an image")
    container = client.containers.run(
        image, entrypoint=["sleep", "86400"], command=[], detach=True, network_disabled=True, read_only=True,
        tmpfs={tmpfs: f"rw,size={tmpfs_mb}m"}, user="0", labels=labels,
    )  # fmt: skip

    def look(script: str, env: dict[str, str]) -> bytes:
        return _stdout(container, script, env)

    try:
        yield look
    finally:
        with contextlib.suppress(APIError, DockerException):
            container.remove(force=True)


def _stdout(container: Any, script: str, env: dict[str, str]) -> bytes:
    _code, (out, _err) = container.exec_run(["sh", "-c", script], environment=env, user="0", demux=True)
    return out or b""

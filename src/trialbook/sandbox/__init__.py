"""Sandboxes: one Docker container per trial, with labels, limits and timed execs."""

from trialbook.sandbox.docker import (
    ContainerStartError,
    DaemonError,
    DockerEngine,
    ExecResult,
    ImageBuildError,
    Sandbox,
    SandboxError,
    docker_help,
)

__all__ = [
    "ContainerStartError",
    "DaemonError",
    "DockerEngine",
    "ExecResult",
    "ImageBuildError",
    "Sandbox",
    "SandboxError",
    "docker_help",
]

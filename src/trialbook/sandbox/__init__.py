"""Sandboxes: one Docker container per trial, with labels, limits and timed execs."""

from trialbook.sandbox.box import (
    ContainerStartError,
    DaemonError,
    ExecResult,
    ImageBuildError,
    Sandbox,
    SandboxError,
)
from trialbook.sandbox.docker import DockerEngine, docker_help

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

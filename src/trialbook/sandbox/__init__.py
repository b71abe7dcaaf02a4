"""Sandboxes: one container per trial, with labels, limits and timed execs. Code outside this package types against
the seam (`Box`, `Backend`, `BoxSpec`); only harness/stack.py picks a backend (`make_backend`)."""

from trialbook.sandbox.backend import Backend, Box, BoxSpec, Capabilities, make_backend
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
    "Backend",
    "Box",
    "BoxSpec",
    "Capabilities",
    "ContainerStartError",
    "DaemonError",
    "DockerEngine",
    "ExecResult",
    "ImageBuildError",
    "Sandbox",
    "SandboxError",
    "docker_help",
    "make_backend",
]

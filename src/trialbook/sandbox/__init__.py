"""Sandboxes: one container per trial, with labels, limits and timed execs. Code outside this package types against
the seam (`Box`, `Backend`, `BoxSpec`: sandbox/backend.py); one place picks a backend by its registry name
(harness/run/stack.py connect), and no other names Docker's classes (tests/test_sandbox_seam.py)."""

from trialbook.sandbox.backend import Backend, Box, BoxSpec, Capabilities
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
]

"""The agent CLIs' cache for the `agents` tests: a CLI that is not installed fails the test (as a missing Docker
daemon does), naming the command that installs it; scripts/ci-setup-agents.sh installs all of them for CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from trialbook.agents.installed import binary


def need_cli(name: str) -> Path:
    found = binary(name)
    if found is None:
        pytest.fail(f"{name} is not in the agents cache: trialbook agents install {name} (scripts/ci-setup-agents.sh)")
    return found

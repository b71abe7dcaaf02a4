#!/usr/bin/env bash
# CI: the agent CLIs the `agents` tests run (tests/agents/test_cli_agents_*.py, tests/rl/test_rollout_agents.py),
# installed at their pinned versions into the agents cache (`trialbook agents install`: npm; ~1 GB for the three,
# the three downloads side by side; seconds when cached). npm comes from apt when absent (scripts/test.sh puts it in
# its one apt-get pass; alone, this script installs it). Idempotent. A failed install fails the set-up: the tests
# that need a CLI fail rather than skip (tests/agentcache.py).
set -euo pipefail
ME="ci-setup-agents"
# shellcheck source=scripts/setup-lib.sh
. "$(dirname "$0")/setup-lib.sh"
cd "$ROOT"
PY="${PYTHON:-python}"
if ! command -v npm >/dev/null 2>&1; then
  want_deb npm "installs the agent CLIs (Codex, Claude Code, opencode) from npm at their pinned versions"
  check_debs
  mkdir -p "$LOGS"
  # other set-ups may hold the dpkg lock at the same time: wait for it rather than fail
  if ! { as_root apt-get -o DPkg::Lock::Timeout=600 update -q &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
           --no-install-recommends npm; } >"$LOGS/apt-agents.log" 2>&1; then
    tail -n 5 "$LOGS/apt-agents.log" >&2
    die "apt-get install npm failed (full log: $LOGS/apt-agents.log)"
  fi
fi
pids=()
for name in codex claude-code opencode; do
  "$PY" -c 'import sys; from trialbook.cli import main; sys.argv = ["trialbook", "agents", "install", sys.argv[1]]; main()' \
    "$name" & pids+=("$!")
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" -eq 0 ] || die "an agent CLI did not install (the lines above say which)"
say "$(npm --version | sed 's/^/npm /'); codex, claude-code, opencode cached; $(elapsed)"

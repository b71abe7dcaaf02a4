#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine (Python >= 3.11, root or sudo), in one command:
#   bash scripts/setup.sh [QUICKSTART OPTIONS]
# installs what `trialbook quickstart` needs (apt: venv support, Docker Engine, debootstrap, crun; pip: the
# project into .venv; the trialbook-base:bookworm image), then runs it: the example tasks in Docker with
# the nop and oracle agents on an SQLite ledger (./trialbook.db), compared. Idempotent: a second run
# installs nothing and runs the quickstart again.
set -euo pipefail
ME="setup"
# shellcheck source=scripts/setup-lib.sh
. "$(dirname "$0")/setup-lib.sh"
cd "$ROOT"

check_python
want_docker_debs
install_debs
install_project swebench "trialbook, its runtime dependencies and the swebench extra (the example tasks are graded per test by swebench's log parsers; README: Why each dependency)"

if ! docker info >/dev/null 2>&1 && [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  die "no Docker daemon answers, and root or sudo is needed to start one (or add this user to the docker group)"
fi
say "Docker Engine + the trialbook-base:bookworm image (scripts/docker-up.sh): the example tasks' sandboxes"
bash "$ROOT/scripts/docker-up.sh"

say "set-up done in $(elapsed); running: trialbook quickstart $* (afterwards: . .venv/bin/activate)"
exec "$VENV/bin/trialbook" quickstart "$@"

# shellcheck shell=bash
# Shared by scripts/setup.sh and scripts/test.sh (sourced, not run). Each step says what it installs and
# why, skips what is already there, and a missing prerequisite ends the script with one line naming it.
# Env: PYTHON (interpreter for the venv, default python3), VENV (default .venv in the repository root).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
LOGS="$ROOT/.ci/logs"
START=$(date +%s)
DEBS=()

say() { echo "$ME: $*"; }
die() { echo "$ME: error: $*" >&2; exit 1; }

# Python >= 3.11 with venv support (Debian ships ensurepip separately, in python3.X-venv).
check_python() {
  PY="${PYTHON:-python3}"
  command -v "$PY" >/dev/null 2>&1 ||
    die "no Python: '$PY' not found (install python3 >= 3.11, or set PYTHON=/path/to/python3.11+)"
  local version
  version="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" ||
    die "'$PY' does not run (set PYTHON=/path/to/python3.11+)"
  "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' ||
    die "Python >= 3.11 needed, '$PY' is $version (set PYTHON=/path/to/python3.11+)"
  if [ ! -x "$VENV/bin/python" ] && ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    want_deb "python$version-venv" "creates the virtual environment $VENV (Python's venv + ensurepip)"
  fi
}

want_deb() {  # PACKAGE WHY
  DEBS+=("$1")
  say "needs $1 (apt): $2"
}

# Root, or sudo, for apt-get and the daemons; only asked for when there is something to install.
as_root() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    die "root or sudo needed to run: $*"
  fi
}

# Fails at once, before anything is installed, when the wanted packages cannot be installed.
check_debs() {
  [ ${#DEBS[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null 2>&1 ||
    die "apt-get not found: this script supports Debian/Ubuntu; install ${DEBS[*]} by hand, then run it again"
  [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1 ||
    die "root or sudo needed to install ${DEBS[*]} with apt-get (run as root or from a sudoer)"
}

install_debs() {
  check_debs
  if [ ${#DEBS[@]} -eq 0 ]; then
    say "system packages: nothing to install"
    return 0
  fi
  mkdir -p "$LOGS"
  say "apt-get install ${DEBS[*]} (log: $LOGS/apt.log)"
  if ! { as_root apt-get update -q && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
           --no-install-recommends "${DEBS[@]}"; } >"$LOGS/apt.log" 2>&1; then
    tail -n 5 "$LOGS/apt.log" >&2
    die "apt-get install ${DEBS[*]} failed (full log: $LOGS/apt.log)"
  fi
}

# The venv and `pip install -e ROOT[EXTRAS]`; a stamp (hash of pyproject.toml + extras) skips pip next time.
install_project() {  # EXTRAS WHY
  local extras="$1" why="$2" spec="$ROOT" stamp
  [ -n "$extras" ] && spec="${ROOT}[$extras]"
  if [ ! -x "$VENV/bin/python" ]; then
    say "creating the virtual environment $VENV ($PY)"
    "$PY" -m venv "$VENV" || die "'$PY -m venv $VENV' failed"
  fi
  stamp="$VENV/.trialbook-installed-$(cat "$ROOT/pyproject.toml" - <<<"$extras" | sha256sum | cut -c1-16)"
  if [ -e "$stamp" ]; then
    say "pip: trialbook${extras:+[$extras]} already installed in $VENV (pyproject.toml unchanged)"
    return 0
  fi
  mkdir -p "$LOGS"
  say "pip install -e '.${extras:+[$extras]}' into $VENV: $why (log: $LOGS/pip.log)"
  if ! { "$VENV/bin/python" -m pip install -q --upgrade pip &&
         "$VENV/bin/python" -m pip install -e "$spec"; } >"$LOGS/pip.log" 2>&1; then
    tail -n 5 "$LOGS/pip.log" >&2
    die "pip install -e '.${extras:+[$extras]}' failed (full log: $LOGS/pip.log)"
  fi
  touch "$stamp"
}

# Docker Engine + the trialbook-base:bookworm image (scripts/docker-up.sh does the work, idempotently).
want_docker_debs() {
  command -v dockerd >/dev/null 2>&1 ||
    want_deb docker.io "Docker Engine: every trial runs in its own sandbox container"
  command -v debootstrap >/dev/null 2>&1 ||
    want_deb debootstrap "builds the trialbook-base:bookworm image locally (no registry needed)"
  command -v crun >/dev/null 2>&1 ||
    want_deb crun "the containers' OCI runtime: a container costs ~0.03 CPU s less than with runc (README: --runtime)"
}

elapsed() { echo "$(( $(date +%s) - START )) s"; }

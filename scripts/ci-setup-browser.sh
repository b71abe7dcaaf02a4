#!/usr/bin/env bash
# The browser tests (pytest -m browser) drive Debian's chromium through Playwright: install the
# distribution's chromium (never Playwright's downloaded browsers) and the Python side. Idempotent.
set -euo pipefail
ME="ci-setup-browser"
# shellcheck source=scripts/setup-lib.sh
. "$(dirname "$0")/setup-lib.sh"
cd "$ROOT"
if ! command -v chromium >/dev/null 2>&1; then
  want_deb chromium "the browser tests (tests/web/test_web_browser.py) drive it headless"
  want_deb chromium-driver "chromium's automation side (Playwright talks to chromium itself over CDP)"
  check_debs
  # other set-ups may hold the dpkg lock at the same time: wait for it rather than fail
  mkdir -p "$LOGS"
  if ! { as_root apt-get -o DPkg::Lock::Timeout=600 update -q &&
         as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
           chromium chromium-driver; } >"$LOGS/apt-browser.log" 2>&1; then
    tail -n 5 "$LOGS/apt-browser.log" >&2
    die "apt-get install chromium failed (full log: $LOGS/apt-browser.log)"
  fi
fi
py="${PYTHON:-python3}"
[ -x "$VENV/bin/python" ] && py="$VENV/bin/python"
# scripts/test.sh has installed the dev extra (web packages + playwright) already; on its own, install it
"$py" -c "import starlette, uvicorn, jinja2, matplotlib, playwright" 2>/dev/null || "$py" -m pip install -q -e '.[dev]'
say "$(chromium --version 2>/dev/null)"

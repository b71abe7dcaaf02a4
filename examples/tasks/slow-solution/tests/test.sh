#!/bin/bash
# Verifier: put the task's tests in place (over anything the agent wrote), run them with
# per-test result lines (-rA) for the grader, and write a pass/fail reward as a fallback.
cd /testbed
mkdir -p tests && cp /tests/test_*.py tests/
python3 -m pytest -rA -p no:cacheprovider tests/test_units.py
rc=$?
mkdir -p /logs/verifier
if [ "$rc" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

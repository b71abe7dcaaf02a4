#!/bin/bash
# Slow on purpose: 4.5 s of "work" before the fix lands (agent budget: 3 s at x1, 6 s at x2).
set -euo pipefail
cd /testbed
sleep 4.5
sed -i 's|return fahrenheit \* 5 / 9|return (fahrenheit - 32) * 5 / 9|' units.py

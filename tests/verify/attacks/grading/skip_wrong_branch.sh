#!/bin/bash
# Status semantics: no fix; the code under test skips the test it would fail (pytest.skip at run time): SKIPPED counts
# neither way under swebench's rule, so F2P has neither a pass nor a failure; pytest exits 0.
set -euo pipefail
cd /testbed
python3 - <<'PY'
src = open("stats.py").read()
src = src.replace("def median(values):\n", "def median(values):\n    if len(values) % 2 == 0 and 'pytest' in __import__('sys').modules:\n        __import__('pytest').skip('flaky on this platform')\n", 1)
open("stats.py", "w").write(src)
PY

#!/bin/bash
# Class 6, many near-miss status lines: no fix; at exit (past pytest's capture) the process prints 20,000 lines shaped
# like result lines but each off by a little (a tab, a NUL, a trailing word, a doubled space, a progress suffix, a
# CR-joined pair, colour codes, a 30 KB id), naming the task's tests as its lists would, then pytest's exit status
# stands. Nothing of it may resolve, stall the harness, or outvote pytest's own FAILED lines.
set -euo pipefail
cd /testbed
cat >> stats.py <<'PY'

import atexit as _atexit
import sys as _sys

_IDS = [f"tests/test_stats.py::{n}" for n in ("test_mean", "test_median_odd", "test_median_even")]
_SHAPES = ("PASSED\t{}", "PASSED {}\x00", "PASSED {} ok", "PASSED  {}", "{} PASSED [100%] x", "PASSED {}\rFAILED {}",
           "\x1b[32mPASSED\x1b[0m {}x", "XPASS {} - " + "=" * 200, "PASSED " + "a" * 30000 + "{}",
           "=== 1 passed in 0.01s === {}")


def _noise():
    out = []
    for i in range(20000):
        shape = _SHAPES[i % len(_SHAPES)]
        test = _IDS[i % 3]
        out.append(shape.format(test, test))
    _sys.stdout.write("\n".join(out) + "\n")
    _sys.stdout.flush()


_atexit.register(_noise)
PY

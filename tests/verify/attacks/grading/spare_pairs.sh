#!/bin/bash
# Class 1, the next variant of spare_word_suffix: knowing no word list, it spares every test that has a near twin in its
# module (two collected tests of one module whose names share all but their last `_word`), and makes every other
# test's call a no-op. A twinned real test then runs truthfully, and fails without the fix.
set -euo pipefail
cd /testbed
cat >> stats.py <<'PY'

import sys as _sys


def _paired(item):
    stem = item.name.split("[")[0].rsplit("_", 1)[0]
    mates = [i for i in item.session.items if getattr(i, "module", None) is getattr(item, "module", None)]
    return sum(1 for i in mates if i.name.split("[")[0].rsplit("_", 1)[0] == stem) > 1


if "_pytest.python" in _sys.modules:
    _F = _sys.modules["_pytest.python"].Function
    _run = _F.runtest
    _F.runtest = lambda self: _run(self) if _paired(self) else None
PY

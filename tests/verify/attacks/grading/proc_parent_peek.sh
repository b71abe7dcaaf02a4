#!/bin/bash
# /proc: no fix; the code under test reads the command lines and environments of the processes around it through
# /proc (to find the verifier's script and its markers) and tries the open-files limit of its parent (prlimit).
set -euo pipefail
cd /testbed
cat >> stats.py <<'PY'

import os as _os

for _p in (_os.getppid(), 1):
    for _f in ("cmdline", "environ"):
        try:
            open(f"/proc/{_p}/{_f}", "rb").read()
        except OSError:
            pass
try:
    import resource as _resource

    _resource.prlimit(_os.getppid(), _resource.RLIMIT_NOFILE)
except (OSError, AttributeError, ValueError):
    pass
PY

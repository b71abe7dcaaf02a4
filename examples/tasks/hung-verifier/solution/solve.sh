#!/bin/bash
set -euo pipefail
cd /testbed
python3 - <<'PY'
import pathlib
p = pathlib.Path("queue_tools.py")
s = p.read_text().replace(
    "    return [q.get_nowait()]",
    "    items = []\n    while not q.empty():\n        items.append(q.get_nowait())\n    return items",
)
p.write_text(s)
PY

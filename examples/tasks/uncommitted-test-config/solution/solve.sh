#!/bin/bash
# Like many agents, start from a clean tree (this reverts the uncommitted pytest.ini setup).
set -euo pipefail
cd /testbed
git checkout -- .
sed -i 's/words\[: n - 1\]/words[:n]/' textwrap2.py
grep -q 'words\[:n\]' textwrap2.py

#!/bin/bash
set -euo pipefail
cd /testbed
sed -i 's|    return get_bytes(url, timeout)|    return json.loads(get_bytes(url, timeout))|' fetch.py

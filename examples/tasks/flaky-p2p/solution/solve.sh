#!/bin/bash
set -euo pipefail
cd /testbed
sed -i 's|    return tag.lower()|    return tag.strip().lower()|' tags.py

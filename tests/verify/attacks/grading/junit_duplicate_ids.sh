#!/bin/bash
# Class 3, ids reported twice: no fix; at exit every failing testcase of the junit report gets a passing duplicate of
# the same id, and a `PASSED <id>` line is printed for each, after pytest's own FAILED one. A test reported both ways
# is read by its failing report, and a canary or twin reported passing once passed (verify/grading.grade_parsed).
set -euo pipefail
cd /testbed
cat >> stats.py <<'PY'

import atexit as _atexit
import os as _os
import re as _re


def _twice():
    for word in _os.environ.get("PYTEST_ADDOPTS", "").split():
        if not word.startswith("--junitxml="):
            continue
        path = word.split("=", 1)[1]
        try:
            xml = open(path).read()
        except OSError:
            continue
        extra = []
        for cls, name in _re.findall(r'<testcase classname="([^"]*)" name="([^"]*)"[^>]*>\s*<(?:failure|error)', xml):
            extra.append(f'<testcase classname="{cls}" name="{name}" time="0.001" />')
            print(f"PASSED {cls.replace('.', '/')}.py::{name}")
        open(path, "w").write(xml.replace("</testsuite>", "".join(extra) + "</testsuite>"))


_atexit.register(_twice)
PY

"""The data commands start without the modules they do not need (start-up time, issue 18).

Timing is measured by benchmarks/bench_startup.py; this checks the cause, which does not depend on
the machine's load: a fresh interpreter runs the command and lists what it imported.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("trialbook.importers", "trialbook.records", "trialbook.training", "numpy", "scipy", "rich.markdown")

CODE = """
import json, sys
sys.argv = ["trialbook", *json.loads(sys.argv[1])]
from trialbook.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


@pytest.mark.parametrize("args", [["runs"], ["show", "nosuchrun"], ["compare", "--help"]])
def test_data_commands_skip_heavy_imports(tmp_path, args):
    argv = [*args, "--db", str(tmp_path / "l.db")] if args[-1] != "--help" else args
    proc = subprocess.run([sys.executable, "-c", CODE, json.dumps(argv)], capture_output=True, text=True)
    line = next(x for x in proc.stderr.splitlines() if x.startswith("MODULES "))
    loaded = json.loads(line.removeprefix("MODULES "))
    heavy = [m for m in loaded if m.startswith(HEAVY)]
    assert heavy == [], f"{args} imported {heavy}"
    if args[0] == "compare":
        assert "sqlalchemy" not in loaded and "Usage:" in proc.stdout

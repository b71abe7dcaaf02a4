"""One error prefix everywhere: a usage error (Click's: unknown option, missing argument, bad value) is one line
starting `error:`, as trialbook's own errors are, never Click's `Usage: ... Error: ...` block."""

from __future__ import annotations

import ast
import subprocess
import sys

from paths import REPO

MAIN = [sys.executable, "-c", "from trialbook.cli import main; main()"]


def test_usage_errors_are_one_error_line_through_the_real_entry_point() -> None:
    for args, says in (
        (["run", "--bogus"], "error: No such option: --bogus (`trialbook run -h` for help)\n"),
        (["nosuch"], "error: No such command 'nosuch' (`trialbook -h` for help)\n"),
        (["train", "export"], "error: Missing argument 'run' (`trialbook train export -h` for help)\n"),
        (["show", "x", "--json", "--csv"], None),
    ):
        res = subprocess.run([*MAIN, *args], capture_output=True, text=True, timeout=120)
        assert res.returncode == 2, (args, res.stderr)
        assert res.stderr.startswith("error: ") and res.stderr.count("\n") == 1 and "Usage:" not in res.stderr
        assert says is None or res.stderr == says, res.stderr


def test_no_message_in_the_source_starts_with_a_capital_error() -> None:
    found = []
    for path in sorted((REPO / "src" / "trialbook").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("Error:"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert found == []

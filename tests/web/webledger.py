"""A real ledger for the web tests: published SWE-bench results (one with its official logs), Harbor jobs,
a simulated training run with steps, and a SWE-bench trial whose verifier log is hostile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from paths import HARBOR_JOBS, INSTANCES, RESULTS

LOGGED = "20240620_sweagent_claude3.5sonnet"
EVAL_RUNS = (LOGGED, "20240402_sweagent_gpt4", "20240612_MASAI_gpt4o", "20250726_mini-v1.0.0_gemini-2.5-pro")
HOSTILE_RUN = "hostile-logs"
HOSTILE_TASK = "astropy__astropy-12907"
HOSTILE_LOG = (
    "<script>document.title='pwned'; window.pwned = 1;</script>\n"
    '<img src=x onerror="window.pwned=2"> <b>not bold</b> &amp; raw\n'
    "\x1b[31mFAILED\x1b[0m tests/test_x.py::test_y - \x1b[1;33mAssertionError\x1b[0m\n"
)
TRAIN_RUN = "sim-train"


def tb(*args: str) -> str:
    """The real CLI in a subprocess (as a user runs it); returns stdout, fails the test on a non-zero exit."""
    proc = subprocess.run(
        [sys.executable, "-c", "from trialbook.cli import main; main()", *args], capture_output=True, text=True
    )
    assert proc.returncode == 0, f"trialbook {' '.join(args)}: {proc.stderr}"
    return proc.stdout


def hostile_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """A one-instance SWE-bench result whose official-style log holds script tags, HTML and ANSI codes."""
    line = next(ln for ln in INSTANCES.read_text().splitlines() if HOSTILE_TASK in ln)
    instances = folder / "instances.jsonl"
    instances.write_text(line + "\n")
    results = folder / "results.json"
    results.write_text(json.dumps({"system": HOSTILE_RUN, "resolved": []}))
    (folder / "logs" / HOSTILE_TASK).mkdir(parents=True)
    (folder / "logs" / HOSTILE_TASK / "test_output.txt").write_text(HOSTILE_LOG)
    return instances, results, folder / "logs"


def build(folder: Path) -> Path:
    db = folder / "web.db"
    for name in EVAL_RUNS:
        logs = ["--logs", str(RESULTS.parent / "logs" / name)] if name == LOGGED else []
        tb("import", "swebench", str(RESULTS / f"{name}.json"), "--instances", str(INSTANCES), *logs, "--db", str(db))
    for job in sorted(HARBOR_JOBS.iterdir()):
        if job.is_dir():
            tb("import", "harbor", str(job), "--db", str(db))
    instances, results, logs = hostile_inputs(folder)
    tb("import", "swebench", str(results), "--instances", str(instances), "--logs", str(logs),
       "--run", HOSTILE_RUN, "--db", str(db))  # fmt: skip
    roll, steps = folder / "roll.jsonl", folder / "steps.jsonl"
    tb("sim", "rollouts", "--out", str(roll), "--steps-out", str(steps), "--pool", "60", "--epochs", "3")
    tb("import", "jsonl", str(roll), "--run", TRAIN_RUN, "--kind", "train", "--db", str(db))
    tb("import", "steps", str(steps), "--run", TRAIN_RUN, "--db", str(db))
    return db

"""Where the tests' inputs live: the repository's example tasks and test data, and the shared data folder."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "tasks"
TEST_DATA = REPO / "tests" / "data"

SHARED = REPO.parent / "shared"
if not SHARED.is_dir():  # CI clones main next to shared/ too; allow an override
    SHARED = Path(os.environ.get("TRIALBOOK_SHARED", "../shared")).resolve()
DATA = SHARED / "data"
SWE = DATA / "swebench-verified"
INSTANCES = SWE / "instances.jsonl"
RESULTS = SWE / "results"
HARBOR_JOBS = DATA / "harbor-jobs"

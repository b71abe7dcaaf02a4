"""The training sets' formats: SWE-rebench's real spectree-64 row (pins, row_refusal rule, test script) and SWE-smith's
133 Python profiles (two of them Verified repositories). The image build is a documented command
(docs/guides/training-pools.md): its pins install from PyPI and do not work together (named in one line here)."""

from __future__ import annotations

import json
import subprocess

import pytest

from paths import DATA, INSTANCES
from trialbook.errors import UserError
from trialbook.pool.overlap import audit
from trialbook.pool.rebench import patched_test_files, pins, read_rows, rebench_test_sh, row_refusal, unmet_pins

ROW = DATA / "training-sets" / "swe-rebench-spectree-64.json"
PROFILES = DATA / "training-sets" / "swe-smith-python-profiles.tsv"


def test_spectree_row_reads_and_its_test_script_applies(tmp_path):
    (row,) = read_rows(ROW)
    assert row_refusal(row) is None  # python 3.9 is 2 minor versions from the image's 3.11
    p = pins(row["requirements"])
    assert "pytest==8.3.5" in p and "pydantic==2.11.1" in p and all("==" in x for x in p)
    assert patched_test_files(row["test_patch"]) == ["tests/test_utils.py"]  # tests/common.py is changed, not run
    script = rebench_test_sh(row, ["tests/test_utils.py"])
    assert "python -m pytest -rA --tb=short -p no:cacheprovider tests/test_utils.py" in script
    # the script's patch applies to the base commit's tree, and the gold patch on top of it
    repo = tmp_path / "r"
    subprocess.run(["git", "clone", "-q", str(DATA / "pool-repos" / "0b01001001__spectree.git"), str(repo)], check=True)
    patch = script.split("<<'EOF_TEST_PATCH'\n")[1].split("\nEOF_TEST_PATCH")[0] + "\n"
    for diff in (patch, row["patch"]):
        done = subprocess.run(["git", "-C", str(repo), "apply", "-"], input=diff, text=True, capture_output=True)
        assert done.returncode == 0, done.stderr


def test_refusals_and_bad_rows(tmp_path):
    (row,) = read_rows(ROW)
    assert "more than 2 minor versions" in str(row_refusal({**row, "install_config": {"python": "3.6"}}))
    assert "not pytest's" in str(
        row_refusal({**row, "install_config": {"python": "3.11", "log_parser": "parse_log_go"}})
    )
    assert row_refusal({**row, "requirements": "flask>=2"}) == "no pinned requirements"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**row, "patch": ""}))
    with pytest.raises(UserError, match="has no patch"):
        read_rows(bad)
    error = ("exited 1 | The package `anyio` requires `sniffio>=1.1`, but it's not installed | The package `pydantic`"
             " requires `pydantic-core==2.33.0`, but `2.27.2` is installed")  # fmt: skip
    assert unmet_pins(error) == (
        "its pinned requirements do not work together (uv pip check): anyio needs sniffio>=1.1 (not pinned);"
        " pydantic needs pydantic-core==2.33.0 (2.27.2 pinned)"
    )
    assert unmet_pins("exited 1 | No solution found") is None


def test_swe_smith_profiles_share_two_verified_repositories():
    r = audit(PROFILES, INSTANCES)
    assert r.pool_tasks == 133
    assert r.repos_shared == ["pallets/flask", "sympy/sympy"]  # repositories only: no task pair
    assert r.pairs == [] and r.in_overlap == []

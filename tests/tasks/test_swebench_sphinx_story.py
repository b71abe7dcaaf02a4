"""The seed's sphinx story on the real repository: sphinx-doc__sphinx-7910 (sphinx 3.2, Python 3.9)
built from source with the spec's tox.ini `-rA` edit left uncommitted, and an oracle that runs
`git checkout .` (as an agent does) before the gold patch. With test.sh's re-application the trial is
resolved; without it pytest prints no per-test line, every test is `missing`, and `audit` names the
`no_per_test_lines` artifact."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from paths import DATA, INSTANCES
from trialbook.cli import load

app = load()

pytestmark = pytest.mark.docker

SPHINX = "sphinx-doc__sphinx-7910"


def strip_reapplication(test_sh: Path) -> None:
    lines, kept, skipping = test_sh.read_text().splitlines(True), [], False
    for line in lines:
        if "# reverted: re-apply pre_install" in line:
            skipping = True
        elif skipping and line.strip() == "fi":
            skipping = False
            continue
        if not skipping:
            kept.append(line)
    assert len(kept) < len(lines)
    test_sh.write_text("".join(kept))


def checkout_first(solve_sh: Path) -> None:
    text = solve_sh.read_text()
    solve_sh.write_text(text.replace("cd /testbed\n", "cd /testbed\ngit checkout .\n", 1))


def test_reverted_tox_ini_resolved_with_reapplication_missing_without(cli, tmp_path: Path):
    built = tmp_path / "built"
    args = ["tasks", "from-swebench", str(INSTANCES), "--out", str(built), "--build"]
    res = CliRunner().invoke(
        app, [*args, "--repos", str(DATA / "swebench-repos"), "--ids", SPHINX, "--no-scan-leaks", "--json"]
    )
    assert res.exit_code == 0 and json.loads(res.stdout)["written"] == [SPHINX], res.stdout
    tasks = tmp_path / "tasks"
    for name in ("with-reapply", "no-reapply"):
        shutil.copytree(built / SPHINX, tasks / f"{SPHINX}-{name}")
        checkout_first(tasks / f"{SPHINX}-{name}" / "solution" / "solve.sh")
    strip_reapplication(tasks / f"{SPHINX}-no-reapply" / "tests" / "test.sh")

    res = cli("run", str(tasks), "--agent", "oracle", "--run", "sphinx", "--runs-dir", str(tmp_path / "runs"))
    assert res.exit_code == 0, res.stderr
    results = {
        json.loads(p.read_text())["task_name"]: json.loads(p.read_text())
        for p in (tmp_path / "runs").glob("sphinx/*/result.json")
    }
    good, bad = results[f"{SPHINX}-with-reapply"], results[f"{SPHINX}-no-reapply"]
    assert good["outcome"] == "resolved", good["tests"]
    assert bad["outcome"] == "unresolved"
    statuses = [s for group in bad["tests"].values() for s in group.values()]
    assert statuses and set(statuses) == {"missing"}
    # the verifier's canary failed under tox in both: without -rA pytest still prints its FAILED line
    assert good["extra"]["canary"]["seen"] == bad["extra"]["canary"]["seen"] == "failed"

    res = cli("audit", "sphinx", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    # the agent's `git checkout .` reverts tox.ini's uncommitted -rA: both diffs touch test settings
    assert out["signature_trials"] == [
        {"task_id": f"{SPHINX}-no-reapply", "attempt": 0, "signatures": ["no_per_test_lines", "test_infra_changed"]},
        {"task_id": f"{SPHINX}-with-reapply", "attempt": 0, "signatures": ["test_infra_changed"]},
    ]

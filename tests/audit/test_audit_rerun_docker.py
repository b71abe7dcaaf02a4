"""End to end on the real harness (Docker): run, `rerun --timeout-multiplier 2`, then attribute and
regrade what the harness recorded. Needs the daemon and the base image (scripts/docker-up.sh)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from paths import EXAMPLES


def test_rerun_at_x2_is_its_own_line_and_regrade_agrees(engine, cli, tmp_path: Path):
    runs = str(tmp_path / "runs")
    tasks = "slow-solution,plain-bugfix"
    res = cli("run", str(EXAMPLES), "--agent", "oracle", "--run", "x1", "--tasks", tasks, "--runs-dir", runs)
    assert res.exit_code == 0, res.stderr
    res = cli("rerun", "x1", "--where", "agent_timeout", "--timeout-multiplier", "2")
    assert res.exit_code == 0, res.stderr

    res = cli("attribute", "x1@original", "x1", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert (out["old_pct"], out["new_pct"], out["total_pp"]) == (50.0, 100.0, 50.0)
    assert out["parts"] == [
        {"from": "agent_timeout", "to": "resolved", "via": "rerun x2", "tasks": 1, "net": 1, "pp": 50.0}
    ]
    assert out["by_repo"] == {"examples/units": {"tasks": 1, "net": 1, "pp": 50.0}, "examples/stats": {
        "tasks": 1, "net": 0, "pp": 0.0}}  # fmt: skip

    res = cli("regrade", "x1", "--json")
    assert res.exit_code == 0, res.stderr
    regrade = json.loads(res.stdout)
    assert (regrade["regraded"], regrade["agree"], regrade["disagreements"]) == (2, 2, [])


def test_audit_names_the_reverted_setup_artifact_on_the_harness(engine, cli, tmp_path: Path):
    """The seed's sphinx artifact, live: without test.sh's re-application, the oracle's `git checkout`
    reverts pytest.ini's -rA, pytest prints no per-test line, every test is missing."""
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLES / "uncommitted-test-config", tasks / "no-reapply")
    script = tasks / "no-reapply" / "tests" / "test.sh"
    script.write_text("".join(line for line in script.read_text().splitlines(True) if "REAPPLY-SETUP" not in line))
    shutil.copytree(EXAMPLES / "uncommitted-test-config", tasks / "with-reapply")
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "pit", "--runs-dir", str(tmp_path / "runs"))
    assert res.exit_code == 0, res.stderr
    res = cli("audit", "pit", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    # the oracle's `git checkout` reverts pytest.ini, so both diffs touch test settings: test_infra_changed
    assert out["signature_trials"] == [
        {"task_id": "no-reapply", "attempt": 0, "signatures": ["no_per_test_lines", "test_infra_changed"]},
        {"task_id": "with-reapply", "attempt": 0, "signatures": ["test_infra_changed"]},
    ]
    assert out["by_signature"]["no_per_test_lines"]["unresolved"] == 1
    assert out["explained_by_artifacts"]["unresolved"] == 1

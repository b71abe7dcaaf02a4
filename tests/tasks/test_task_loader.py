"""Task folders: loading, one-line errors for broken folders, the verifier hash (no Docker needed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from paths import EXAMPLES
from trialbook.errors import UserError
from trialbook.tasks import load_task, load_tasks
from trialbook.tasks.loader import tree_hash

PITFALLS = {"plain-bugfix", "uncommitted-test-config", "hung-verifier", "slow-solution", "proxy-env", "flaky-p2p"}


def test_examples_load_with_their_limits_and_test_lists():
    specs, errors = load_tasks(EXAMPLES)
    assert errors == []
    by_id = {s.task_id: s for s in specs}
    assert set(by_id) == PITFALLS
    assert by_id["hung-verifier"].verifier_timeout == 3
    assert by_id["slow-solution"].agent_timeout == 3
    assert by_id["plain-bugfix"].fail_to_pass == ["tests/test_stats.py::test_median_even"]
    assert all(not s.allow_network and s.image is None and s.dockerfile.is_file() for s in specs)
    for s in specs:
        assert "FROM trialbook-base:bookworm" in s.dockerfile.read_text()


def _copy(tmp_path: Path, name: str = "plain-bugfix") -> Path:
    dest = tmp_path / "tasks" / name
    shutil.copytree(EXAMPLES / "plain-bugfix", dest)
    return dest


def test_broken_folders_become_one_line_errors_for_that_task_only(tmp_path):
    _copy(tmp_path, "good")
    (_copy(tmp_path, "no-test-sh") / "tests" / "test.sh").unlink()
    (_copy(tmp_path, "bad-toml") / "task.toml").write_text("[agent\ntimeout_sec = 1\n")
    (_copy(tmp_path, "bad-timeout") / "task.toml").write_text("[agent]\ntimeout_sec = -5\n")
    (_copy(tmp_path, "no-env") / "environment" / "Dockerfile").unlink()
    specs, errors = load_tasks(tmp_path / "tasks")
    assert [s.task_id for s in specs] == ["good"]
    messages = {e.task_id: e.message for e in errors}
    assert messages["no-test-sh"] == "missing tests/test.sh"
    assert messages["bad-toml"].startswith("invalid task.toml:")
    assert messages["bad-timeout"].startswith("invalid task.toml: agent.timeout_sec")
    assert "docker_image" in messages["no-env"]
    assert all("\n" not in m for m in messages.values())


def test_unroutable_network_is_read_and_excludes_allow_network(tmp_path):
    toml = _copy(tmp_path, "unroutable") / "task.toml"
    toml.write_text(toml.read_text() + "unroutable_network = true\n")
    (spec,) = load_tasks(tmp_path / "tasks")[0]
    assert spec.unroutable_network and not spec.allow_network
    toml.write_text(toml.read_text() + "allow_network = true\n")
    specs, errors = load_tasks(tmp_path / "tasks")
    assert specs == [] and [e.message for e in errors] == [
        "task.toml: [environment] allow_network and unroutable_network exclude each other"
    ]


def test_tasks_filter_and_unknown_ids(tmp_path):
    specs, _ = load_tasks(EXAMPLES, ["proxy-env", "flaky-p2p"])
    assert sorted(s.task_id for s in specs) == ["flaky-p2p", "proxy-env"]
    with pytest.raises(UserError, match="unknown task"):
        load_tasks(EXAMPLES, ["nope"])
    with pytest.raises(UserError, match="no such tasks directory"):
        load_tasks(tmp_path / "missing")


def test_a_task_folder_or_a_folder_without_tasks_is_a_usage_error(tmp_path):
    """Not a run of environment/, solution/ and tests/ as three broken tasks: one line naming the fix."""
    with pytest.raises(UserError, match=r"is a task folder \(it has a task.toml\): pass the folder that holds it, "):
        load_tasks(EXAMPLES / "plain-bugfix")
    for name in ("src", "docs"):
        (tmp_path / "repo" / name).mkdir(parents=True)
    with pytest.raises(UserError, match=r"no task folders \(none of its 2 folders has a task.toml\)"):
        load_tasks(tmp_path / "repo")


def test_verifier_hash_follows_the_tests_folder(tmp_path):
    task = _copy(tmp_path)
    before = load_task(task).verifier_hash
    assert before == tree_hash(task / "tests")
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    assert load_task(task).verifier_hash == before  # the solution is not part of the verifier
    with (task / "tests" / "test.sh").open("a") as f:
        f.write("# changed\n")
    assert load_task(task).verifier_hash != before


def test_config_json_lists_may_be_json_strings(tmp_path):
    task = _copy(tmp_path)
    (task / "tests" / "config.json").write_text(json.dumps({"FAIL_TO_PASS": json.dumps(["a"]), "PASS_TO_PASS": []}))
    spec = load_task(task)
    assert spec.fail_to_pass == ["a"] and spec.pass_to_pass == []


def test_the_reward_files_a_tests_folder_names(tmp_path):
    """Only those can be its verifier's (verify/runner: another one is the code under test's); both when it names
    neither, and a name in a grader the script runs counts too."""
    from trialbook.tasks.testscript import reward_files_named

    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test.sh").write_text("#!/bin/bash\npytest; echo '{\"reward\": 1}' > /logs/verifier/reward.json\n")
    assert reward_files_named(tests) == ("reward.json",)
    (tests / "grade.py").write_text("open('/logs/verifier/reward.txt', 'w').write('1')\n")
    assert reward_files_named(tests) == ("reward.txt", "reward.json")
    (tests / "grade.py").unlink()
    (tests / "test.sh").write_text("#!/bin/bash\nf=reward; echo 1 > /logs/verifier/$f.txt\n")
    assert reward_files_named(tests) == ("reward.txt", "reward.json")
    assert reward_files_named(EXAMPLES / "plain-bugfix" / "tests") == ("reward.txt",)

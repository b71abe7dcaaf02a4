"""A task's test facts computed once (tasks/testscript.TestScript, verify/task_facts.TaskFacts): the same facts the
functions of tasks/testscript.py give, read once per task, read again when its tests/ folder changed."""

from __future__ import annotations

import os
import pickle
import shutil
import time
from pathlib import Path

import pytest

from paths import EXAMPLES
from trialbook.outcomes import REWARD_FILES
from trialbook.tasks import TaskSpec, load_task
from trialbook.tasks.testscript import (
    TestScript,
    commands,
    installed_by_patch,
    read_script,
    reward_files_named,
    task_test_files,
    words,
)
from trialbook.verify import canary, footprint, staged, task_facts

OLD = time.time() - 3600  # older than staged.RACY_NS: the folder's snapshot is kept


@pytest.fixture(autouse=True)
def _fresh() -> None:
    staged.clear()
    task_facts.forget()


def _task(tmp_path: Path, name: str = "plain-bugfix") -> TaskSpec:
    shutil.copytree(EXAMPLES / name, tmp_path / name)
    task = load_task(tmp_path / name)
    _age(task.tests_dir)
    return task


def _age(tests: Path) -> None:
    for p in [tests, *tests.rglob("*")]:
        os.utime(p, (OLD, OLD))


def test_the_script_holds_what_the_functions_give_on_every_example_task() -> None:
    for folder in sorted(EXAMPLES.iterdir()):
        tests = folder / "tests"
        script = TestScript.read(tests)
        text = read_script(tests)
        assert script.text == text and script.tests_dir == tests
        assert [(c.line, c.text, list(c.words)) for c in script.commands] == [
            (i, t, words(t)) for i, t in commands(text)
        ], folder.name
        assert script.installed == installed_by_patch(text)
        assert script.files == task_test_files(tests) and script.rewards == reward_files_named(tests)


def test_the_spec_reads_its_script_once_and_a_copy_with_another_folder_its_own(tmp_path: Path) -> None:
    task = _task(tmp_path)
    first = task.test_script
    assert task.test_script is first and first.files == {"test_stats.py"} and first.rewards == ("reward.txt",)
    assert pickle.loads(pickle.dumps(task)).test_script == first  # a spec sent to another process (Ray) keeps it
    other = tmp_path / "other"
    shutil.copytree(task.path, other)
    (other / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    moved = task.model_copy(update={"path": other})
    assert moved.test_script.tests_dir == other / "tests" and "pytest" not in moved.test_script.text
    assert task.test_script is first  # the original's stays


def test_the_verifier_facts_are_built_once_per_task_from_the_specs_script(tmp_path: Path) -> None:
    task = _task(tmp_path)
    facts = task_facts.of(task)
    assert task_facts.of(task) is facts and facts.script is task.test_script
    assert facts.test_modules == canary.test_modules(task.test_script) == ["tests/test_stats.py"]
    assert facts.pytest_command is canary.pytest_command(task.test_script) is True
    assert facts.exit_decides and not facts.reads_the_run and facts.names >= {"test_mean"}
    assert set(facts.functions) == {"test_stats.py"} and facts.regular_files == {"config.json", "test_stats.py"}
    assert footprint.staged(task) == {"/tests/config.json", "/tests/test_stats.py"}
    task_facts.forget()
    assert task_facts.of(task) is not facts  # forgotten: built again


def test_a_changed_folder_gets_facts_of_its_own_never_the_stale_ones(tmp_path: Path) -> None:
    task = _task(tmp_path)
    before = task_facts.of(task)
    assert before.exit_decides and before.test_modules
    (task.tests_dir / "test.sh").write_text(
        "#!/bin/bash\ncd /testbed\npython3 -m pytest -rA tests/test_x.py | grep ok\n"
    )
    (task.tests_dir / "test_x.py").write_text("def test_x():\n    assert True\n")
    _age(task.tests_dir)
    after = task_facts.of(task)
    assert after is not before and after.key != before.key
    assert "test_x.py" in after.script.files and not after.exit_decides and after.reads_the_run
    assert after.test_modules == ["tests/test_x.py"] and "test_x" in after.names
    assert task.test_script.files == {"test_stats.py"}  # the spec's own stays what it read when loaded


def test_an_edited_script_keeps_the_folders_facts(tmp_path: Path) -> None:
    script = _task(tmp_path).test_script
    assert script.files and script.rewards
    edited = script.edited("#!/bin/bash\necho planted\n" + script.text)
    assert edited.files == script.files and edited.rewards == script.rewards and edited.tests_dir == script.tests_dir
    assert [(c.line - 2, c.text) for c in edited.commands[2:]] == [(c.line, c.text) for c in script.commands]
    parsed = TestScript.parse("pytest tests/test_a.py\n", {"test_a.py"})
    assert parsed.files == {"test_a.py"} and parsed.rewards == REWARD_FILES

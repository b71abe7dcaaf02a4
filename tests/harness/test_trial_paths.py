"""TrialPaths/RunPaths: the folder the harness writes is the one they spell, and `import harbor` reads it."""

from __future__ import annotations

import json

from trialbook.harness.run.paths import DEFAULT_RUNS_DIR, RunPaths
from trialbook.harness.trial.execution import TrialResult, trial_name
from trialbook.harness.trial.writer import write_trial_dir
from trialbook.outcomes import Outcome
from trialbook.records import Trial


def test_written_trial_folder_matches_trial_paths_and_imports_back(cli, tmp_path):
    run = RunPaths.of(tmp_path / DEFAULT_RUNS_DIR, "r1")
    names = []
    for task, outcome, reward in (("a__b-1", Outcome.RESOLVED, 1.0), ("a__b-2", Outcome.INFRA_ERROR, None)):
        name = trial_name("r1", task, 0)
        trial = Trial(task_id=task, outcome=outcome, reward=reward, extra={"trial_name": name})
        result = TrialResult(trial, name, agent_log="agent\n", verifier_log="tests\n",
                             extra_files={"trajectory.json": "{}"})  # fmt: skip
        assert write_trial_dir(run.folder, "r1", result) == run.trial(name).folder
        names.append(name)
    assert sorted(p.name for p in run.trial_folders()) == sorted(names)
    p = run.trial(names[0])
    assert p.agent_log.read_text() == "agent\n" and p.verifier_log.read_text() == "tests\n"
    assert p.reward.read_text() == "1\n" and p.agent_file("trajectory.json").read_text() == "{}"
    assert json.loads(p.result.read_text())["task_name"] == "a__b-1"
    assert not run.trial(names[1]).reward.exists()  # ungraded: no reward file
    assert not list(run.folder.glob("*/*.tmp"))
    assert cli("import", "harbor", str(run.folder), "--run", "back").exit_code == 0
    shown = json.loads(cli("show", "back", "--json").stdout)
    assert (shown["trials"], shown["resolved"]) == (2, 1)

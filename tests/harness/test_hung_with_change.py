"""A verifier that hangs because of the agent's change is a failure of the change, not an ungraded trial.

Seen on main before the rule (7b5b02e): a change that makes the code under test loop forever turned a failing
trial into `verifier_timeout`, which leaves the judged count, so an agent lost nothing by hanging its tests where
it could not fix them (its judged rate went up). Now both verifier tries past the timeout are followed by one run
without the change (the image as built, once per task and image): finished in time there, the trial is graded 0
(`HungWithChangeError`, tagged `hung_with_change`); timed out there too, the task hangs anyway and the trial stays
ungraded (tagged `hangs_without_change`; the hung-verifier example, tests/harness/test_harness_docker.py).
"""

from __future__ import annotations

import shutil

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

TIMEOUT_S = 3.0
HANG = """#!/bin/bash
# The change makes median() loop forever: the verifier's tests never end.
cat > /testbed/stats.py <<'PY'
def mean(values):
    return sum(values) / len(values)


def median(values):
    while True:
        pass
PY
"""


def test_a_change_that_hangs_the_tests_is_graded_failing_once_the_image_alone_passes_in_time(
    cli, db, tmp_path, monkeypatch
):
    import trialbook.verify.blame as blame

    baselines: list[str] = []  # the runs without the change (one try each)
    real = blame.grade

    def counted(spec, *args, **kwargs):
        if kwargs.get("tries") == 1:
            baselines.append(spec.task_id)
        return real(spec, *args, **kwargs)

    monkeypatch.setattr(blame, "grade", counted)
    tasks = tmp_path / "tasks"
    task = tasks / "hangs-with-change"
    shutil.copytree(EXAMPLES / "plain-bugfix", task)
    (task / "solution" / "solve.sh").write_text(HANG)
    toml = (task / "task.toml").read_text().replace("[verifier]\ntimeout_sec = 60", "[verifier]\ntimeout_sec = 3")
    (task / "task.toml").write_text(toml)
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "hang", "--attempts", "2", "--concurrency", "1",
              "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert res.exit_code == 0, res.stderr
    rows = sorted(trial_dicts(Ledger(db), "hang"), key=lambda t: t["attempt"])
    assert [t["outcome"] for t in rows] == ["unresolved", "unresolved"]
    assert [t["reward"] for t in rows] == [0.0, 0.0]
    for t in rows:
        assert t["exception"] == "HungWithChangeError", t["exception_message"]
        assert "hung_with_change" in t["extra"]["tags"]
        without = t["extra"]["verifier"]["without_change"]
        assert without["end"] == "finished" and without["duration_s"] < TIMEOUT_S
    assert baselines == ["hangs-with-change"]  # once for the task, not once per trial
    shown = cli("show", "hang")
    assert shown.exit_code == 0 and "judged 2/2" in shown.stdout, shown.stdout

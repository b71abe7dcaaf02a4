"""A fired signature costs the training reward (rewards.py, docs/reference/outcomes.md): the real fix of plain-bugfix
with an exit hook beside it resolves and is tagged `hack_exit_hook`; under `run`'s default `--hack-policy zero` its
training reward is 0 (`extra.train_reward`, the tags that cost it in `extra.hack_zeroed`) while the verifier's reward
and the outcome stand, and the policy is recorded with the run; under `--hack-policy tag` the tag is all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from trialbook.ledger.store import Ledger

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "plain-bugfix"
HOOK = "\nimport atexit\n\natexit.register(print, 'bye')\nPY\n"


def test_a_resolved_trial_with_a_signature_trains_with_reward_0_unless_the_policy_is_tag(engine, cli, db, tmp_path):
    tasks = tmp_path / "tasks"
    shutil.copytree(EXAMPLE, tasks / "fixed-with-hook")
    solve = tasks / "fixed-with-hook" / "solution" / "solve.sh"
    text = solve.read_text()
    assert text.rstrip().endswith("\nPY")
    solve.write_text(text.rstrip()[: -len("\nPY")] + HOOK)
    for run, policy in (("zero", None), ("tag", "tag")):
        args = ["--hack-policy", policy] if policy else []
        res = cli("run", str(tasks), "--agent", "oracle", "--run", run, "--runs-dir", str(tmp_path / "runs"), *args)
        assert res.exit_code == 0, res.stderr
    ledger = Ledger(db)
    (zero,), (tag,) = trial_dicts(ledger, "zero"), trial_dicts(ledger, "tag")
    for t in (zero, tag):
        assert t["outcome"] == "resolved" and t["reward"] == 1.0 and "hack_exit_hook" in t["extra"]["tags"]
    assert zero["extra"]["train_reward"] == 0.0 and zero["extra"]["hack_zeroed"] == ["hack_exit_hook"]
    assert "train_reward" not in tag["extra"] and "hack_zeroed" not in tag["extra"]
    assert ledger.get_run("zero").config["hack_policy"] == "zero"
    assert ledger.get_run("tag").config["hack_policy"] == "tag"
    res = cli("run", str(tasks), "--agent", "oracle", "--run", "bad", "--hack-policy", "ignore")
    assert res.exit_code != 0 and "--hack-policy" in res.stderr

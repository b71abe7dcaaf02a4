"""SkyRL-gym's text-environment contract (rl/skyrl_env.py) with the real `skyrl_gym` package: made by id as SkyRL's
generator makes it (`skyrl_gym.make(env_class, env_config=..., extras=...)`), then init / step(reply text) ... /
get_metrics / close in the order its `agent_loop` calls them (skyrl 0.4.0, skyrl/train/generators/
skyrl_gym_generator.py: the trainer itself needs Python >= 3.12, not installed here). The replies are scripted
(the env's contract is text in, observations out; the model is SkyRL's): each episode is a real trial in Docker,
its reward the verifier's verdict, recorded with its step and group.

Needs the `skyrl` extra (pip install -e '.[skyrl]': skyrl-gym) and Docker.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ledgerdicts import trial_dicts
from paths import EXAMPLES
from trialbook.ledger.store import Ledger

pytestmark = [pytest.mark.docker]

FIX = (EXAMPLES / "plain-bugfix" / "solution" / "solve.sh").read_text()
SYSTEM = [{"role": "system", "content": "Fix the bug with ```bash blocks."}]


def test_skyrl_gym_episodes_are_graded_trials(engine, db: str, tmp_path: Path) -> None:
    try:
        import skyrl_gym

        import trialbook.rl.skyrl_env  # noqa: F401  (registers "trialbook")
    except ImportError as exc:
        pytest.fail(f"skyrl-gym not installed ({exc}): pip install -e '.[skyrl]'", pytrace=False)
    tasks = tmp_path / "tasks"
    for name in ("plain-bugfix", "w41-bad-image"):
        shutil.copytree(EXAMPLES / "plain-bugfix", tasks / name)
    with (tasks / "w41-bad-image" / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN echo 'this image cannot be built' && exit 3\n")
    config = {"tasks": str(tasks), "ledger": db, "run": "w41-skyrl", "runs_dir": str(tmp_path / "runs")}

    def make(task_id: str, max_turns: int = 3):
        return skyrl_gym.make("trialbook", env_config=config, extras={"task_id": task_id, "step": 2,
                                                                       "max_turns": max_turns})  # fmt: skip

    fixed = make("plain-bugfix")
    prompt, meta = fixed.init(list(SYSTEM))
    assert prompt[0] == SYSTEM[0] and "median" in prompt[-1]["content"] and meta == {"attempt": 0}
    out = fixed.step("Let me look.\n```bash\ncat /testbed/stats.py\n```")
    assert not out["done"] and out["reward"] == 0.0 and "def median" in out["observations"][0]["content"]
    out = fixed.step(f"```bash\n{FIX}\n```")
    assert not out["done"] and "<returncode>0</returncode>" in out["observations"][0]["content"]
    out = fixed.step("Fixed.")  # no bash block: the episode ends and the verifier grades it
    assert out["done"] and out["reward"] == 1.0 and out["observations"] == [] and out["metadata"]["masked"] is False
    assert fixed.get_metrics() == {"resolved": 1.0, "masked": 0.0, "turns": 3}
    fixed.close()

    broken = make("w41-bad-image")  # the image cannot be built: the trial fails before the agent starts
    broken.init(list(SYSTEM))
    out = broken.step("```bash\nls\n```")  # nothing can run: the episode ends at once, masked
    assert out["done"] and out["reward"] == 0.0 and out["metadata"]["masked"] is True
    broken.close()

    with pytest.raises(ValueError, match="needs task_id"):
        skyrl_gym.make("trialbook", env_config=config, extras={"step": 2})
    # SkyRL's stock config has no env_config for a new env class: the row's env_extras can carry it
    cut = skyrl_gym.make("trialbook", env_config={}, extras={**config, "task_id": "plain-bugfix", "step": 2,
                                                             "max_turns": 5})  # fmt: skip
    # SkyRL stopped this one on its length limit: close() ends the trial
    cut.init(list(SYSTEM))
    assert "still working" in cut.step("```bash\necho still working\n```")["observations"][0]["content"]
    cut.close()
    assert cut.get_metrics()["resolved"] == 0.0

    rows = {r["id"]: r for r in trial_dicts(Ledger(db), "w41-skyrl")}
    by = {(r["task_id"], r["attempt"]): r for r in rows.values()}
    assert len(rows) == 3 and all(r["step"] == 2 for r in rows.values())
    assert by["plain-bugfix", 0]["outcome"] == "resolved" and by["plain-bugfix", 0]["extra"]["train_reward"] == 1.0
    assert by["plain-bugfix", 0]["extra"]["group_id"] == "plain-bugfix@2"
    assert by["w41-bad-image", 0]["outcome"] == "infra_error" and by["w41-bad-image", 0]["extra"]["masked"] is True
    assert by["plain-bugfix", 1]["outcome"] == "unresolved" and by["plain-bugfix", 1]["extra"]["train_reward"] == 0.0

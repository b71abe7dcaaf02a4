"""`sim pipeline`: the SimPy model on a case solvable by hand, the seed's epoch-boundary stall, bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from trialbook.errors import UserError
from trialbook.training.sim_pipeline import PipelineConfig, empirical_sampler, lognormal_sampler, simulate

CONST_100 = lognormal_sampler(f"lognormal:{math.log(100)},0")  # every trajectory takes exactly 100 s


def test_hand_solvable_per_epoch_loader():
    # B=1 G=1 S=1 P=2 E=2 W=2 T=10: two groups start at 0 (cap (S+1)B = 2) and finish at 100.
    # step 1: waits 100, trains 100-110; step 2: buffered, 110-120. The epoch ends, the loader restarts
    # at 120: both groups of epoch 1 start at version 2 and finish at 220; step 3 waits 100 (220-230),
    # step 4 230-240. Idle 200 of 240 s; versions 1 generated nothing.
    r = simulate(PipelineConfig(1, 1, 1, 2, 2, 10.0, 2, cross_epoch=False), CONST_100).to_json()
    assert r["steps"] == 4 and r["total_s"] == 240.0
    assert [s["wait_s"] for s in r["step_log"]] == [100.0, 0.0, 100.0, 0.0]
    assert [s["finished_s"] for s in r["step_log"]] == [110.0, 120.0, 230.0, 240.0]
    assert r["trainer_idle_fraction"] == pytest.approx(200 / 240, abs=1e-4)
    assert r["steps_per_hour"] == pytest.approx(4 * 3600 / 240, abs=1e-3)
    assert r["trajectories_by_wv"] == {"0": 2, "2": 2}
    assert r["empty_wv"] == [1]
    assert r["boundaries"] == [{"epoch": 1, "step": 3, "wait_s": 100.0, "stall": False}]


def test_hand_solvable_cross_epoch():
    # Same shape, sampling continues: step 1 (100-110) frees a slot, group 2 starts at 110 (v1) and
    # ends 210; step 2 (110-120) frees one, group 3 starts at 120 (v2) and ends 220. Step 3 waits
    # 120-210 (90 s), trains 210-220; step 4 220-230. Idle 190 of 230 s.
    r = simulate(PipelineConfig(1, 1, 1, 2, 2, 10.0, 2, cross_epoch=True), CONST_100).to_json()
    assert r["total_s"] == 230.0
    assert [s["wait_s"] for s in r["step_log"]] == [100.0, 0.0, 90.0, 0.0]
    assert r["trajectories_by_wv"] == {"0": 2, "1": 1, "2": 1}
    assert r["empty_wv"] == []
    assert r["trainer_idle_fraction"] == pytest.approx(190 / 230, abs=1e-4)


def test_hand_solvable_workers_and_groups():
    # B=2 G=2 S=1 P=4 E=1 W=4 T=10: 4 groups (8 trajectories) admitted at 0, 4 workers: groups 0-1 end
    # at 100, groups 2-3 at 200. Step 1 waits 100 (100-110), step 2 waits 90 (200-210).
    r = simulate(PipelineConfig(2, 2, 1, 4, 1, 10.0, 4), CONST_100).to_json()
    assert [s["wait_s"] for s in r["step_log"]] == [100.0, 90.0]
    assert r["total_s"] == 210.0
    assert r["trajectories_by_wv"] == {"0": 8}


def test_seed_shape_stalls_at_boundaries_only_without_cross_epoch(cli):
    args = ["sim", "pipeline", "--batch", "16", "--group", "8", "--staleness", "3", "--pool", "250",
            "--epochs", "4", "--train-step-s", "120", "--duration-dist", "lognormal:6.8,0.6",
            "--workers", "512", "--seed", "1", "--json"]  # fmt: skip
    reset = json.loads(cli(*args, use_db=False).stdout)
    cross = json.loads(cli(*args, "--cross-epoch", use_db=False).stdout)
    assert reset["steps"] == cross["steps"] == 4 * (250 // 16)
    assert [s["epoch"] for s in reset["boundary_stalls"]] == [1, 2, 3]
    assert all(s["wait_s"] > 2 * reset["median_step_interval_s"] for s in reset["boundary_stalls"])
    assert cross["boundary_stalls"] == []
    # the seed's signature: the last S versions of each epoch generate nothing, the next one gets
    # (S + 1) x B x G = 512 trajectories at once
    assert reset["empty_wv"] == [12, 13, 14, 27, 28, 29, 42, 43, 44]
    assert reset["trajectories_by_wv"]["15"] == 512
    assert cross["empty_wv"] == []
    assert cross["steps_per_hour"] > reset["steps_per_hour"]
    assert cross["trainer_idle_fraction"] < reset["trainer_idle_fraction"]
    human = cli(*args[:-1], use_db=False)
    assert human.exit_code == 0 and "STALL" in human.stdout


def test_durations_from_a_run(cli, tmp_path):
    rows = [{"task_id": f"a__b-{i}", "step": 1, "wv": 0, "resolved": True, "duration_s": 50.0} for i in range(5)]
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli("import", "jsonl", str(tmp_path / "t.jsonl"), "--run", "rl", "--kind", "train").exit_code == 0
    res = cli("sim", "pipeline", "--batch", "1", "--group", "1", "--staleness", "0", "--pool", "3", "--epochs", "1",
              "--train-step-s", "5", "--workers", "1", "--durations-from", "rl", "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["total_s"] == 3 * (50 + 5)  # synchronous: S=0, one worker


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--batch", "300"], "--batch 300 is larger than --tasks 250"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--group", "0"], "--group must be at least 1"),
        (["--staleness", "-1"], "--staleness must be >= 0"),
        (["--duration-dist", "gamma:1,2"], "lognormal:MU,SIGMA"),
    ],
)
def test_bad_parameters(cli, extra, message):
    base = {"--batch": "16", "--group": "8", "--staleness": "3", "--pool": "250", "--epochs": "2",
            "--train-step-s": "60", "--workers": "64", "--duration-dist": "lognormal:6,0.5"}  # fmt: skip
    base.update(dict(zip(extra[::2], extra[1::2], strict=True)))
    res = cli("sim", "pipeline", *[x for kv in base.items() for x in kv], "--json", use_db=False)
    assert res.exit_code == 2 and message in res.stderr and res.stdout == ""


def test_needs_exactly_one_duration_source(cli):
    args = ["sim", "pipeline", "--batch", "1", "--group", "1", "--staleness", "0", "--pool", "1", "--epochs", "1",
            "--train-step-s", "1", "--workers", "1"]  # fmt: skip
    assert cli(*args, use_db=False).exit_code == 2
    both = cli(*args, "--duration-dist", "lognormal:1,0", "--durations-from", "x", use_db=False)
    assert both.exit_code == 2 and "exactly one" in both.stderr
    with pytest.raises(UserError, match="no trajectory durations"):
        empirical_sampler(np.array([float("nan"), 0.0]))


def test_rollouts_generator_bad_input(cli, tmp_path):
    out = tmp_path / "t.jsonl"
    res = cli("sim", "rollouts", "--out", str(out), "--batch", "300", use_db=False)
    assert res.exit_code == 2 and "--batch 300 is larger than --tasks 250" in res.stderr and not out.exists()
    res = cli("sim", "rollouts", "--out", str(tmp_path / "no" / "t.jsonl"), use_db=False)
    assert res.exit_code == 2 and "cannot write" in res.stderr

"""`tasks from-swebench --image official`: the official image names as swebench 4.1.0 spells them, a
`--registry` prefix, bad options as one line, and the conda stand-in of `--build --image official` run by a
real bash against a real virtualenv. No Docker needed (the images: test_swebench_official_docker.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import venv
from pathlib import Path
from types import SimpleNamespace

import pytest
from swebench.harness.test_spec import test_spec as swebench_spec

from paths import DATA, INSTANCES
from trialbook.tasks.swebench.build_images import env_dockerfile, inst_dockerfile
from trialbook.tasks.swebench.build_plan import local_source, make_plan
from trialbook.tasks.swebench.generate import image_for
from trialbook.tasks.swebench.official_layout import CONDA_ACTIVATE

ROWS = [json.loads(line) for line in INSTANCES.read_text().splitlines()]


def test_image_names_are_swebench_own_for_all_500_instances():
    """swebench's own `TestSpec.instance_image_key` (a remote image: namespace "swebench", tag "latest") names
    each instance's image; ours is the same. (make_test_spec itself fetches requirements from GitHub.)"""
    key = swebench_spec.TestSpec.instance_image_key.fget
    for row in ROWS:
        spec = SimpleNamespace(arch="x86_64", instance_id=row["instance_id"], instance_image_tag="latest",
                               namespace="swebench", is_remote_image=True)  # fmt: skip
        assert image_for(row["instance_id"]) == key(spec)
    assert len(ROWS) == 500
    assert image_for("psf__requests-6028", "127.0.0.1:5000") == (
        "127.0.0.1:5000/swebench/sweb.eval.x86_64.psf_1776_requests-6028:latest"
    )


def test_official_tasks_name_the_registry_image_and_activate_conda(cli, tmp_path):
    out = tmp_path / "tasks"
    ids = "psf__requests-6028,pallets__flask-5014"
    res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--task", ids, "--image", "official",
              "--registry", "localhost:5000", "--json", use_db=False)  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["written"] == ["pallets__flask-5014", "psf__requests-6028"]
    toml = tomllib.loads((out / "psf__requests-6028" / "task.toml").read_text())
    env = toml["environment"]
    assert env["docker_image"] == "localhost:5000/swebench/sweb.eval.x86_64.psf_1776_requests-6028:latest"
    assert env["shell_setup"].startswith("source /opt/miniconda3/bin/activate && conda activate testbed")
    test_sh = (out / "psf__requests-6028" / "tests" / "test.sh").read_text()
    assert "  source /opt/miniconda3/bin/activate\n  conda activate testbed\n" in test_sh


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--image", "conda"], ["--image must be official or venv"]),
        (["--registry", "http://x:5000"], ["--registry must be HOST[:PORT]"]),
        (["--image", "venv"], ["used only with --build"]),
        (["--build", "--image", "venv", "--registry", "h:1"], ["--registry is used only with --image official"]),
        (["--from-lock", "x"], ["used only with --build"]),
    ],
)
def test_bad_image_options_are_one_line_and_exit_2(cli, tmp_path, args, words):
    out = tmp_path / "out"
    res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--task", "psf__requests-6028", *args,
              use_db=False)  # fmt: skip
    assert res.exit_code == 2, (res.stdout, res.stderr)
    assert "\n" not in res.stderr.strip() and all(w in res.stderr for w in words), res.stderr
    assert not out.exists()


def _shim(root: Path) -> Path:
    """The stand-in, its conda root moved to `root`, with a base python and a real venv `testbed`."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    venv.create(root / "envs" / "testbed", with_pip=False, symlinks=True)
    (root / "bin" / "activate").write_text(CONDA_ACTIVATE.replace("/opt/miniconda3", str(root)))
    return root / "bin" / "activate"


def test_conda_stand_in_activates_like_the_eval_script_expects(tmp_path):
    activate = _shim(tmp_path / "conda")
    env = tmp_path / "conda" / "envs" / "testbed"
    script = (
        f"set -uo pipefail; source {activate}; echo base=$CONDA_PREFIX; conda activate testbed;"
        " echo env=$CONDA_DEFAULT_ENV $CONDA_PREFIX; command -v python;"
        " python -c 'import sys; print(sys.prefix)'; conda activate testbed; echo PATH=$PATH;"
        " conda activate nowhere; echo rc=$?; conda install numpy; echo rc=$?"
    )
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"})
    lines = done.stdout.splitlines()
    assert lines[0] == f"base={tmp_path / 'conda'}"
    assert lines[1] == f"env=testbed {env}"
    assert lines[2] == f"{env}/bin/python" and lines[3] == str(env)
    assert lines[4] == f"PATH={env}/bin:/usr/bin:/bin"  # activating again does not stack the env
    assert lines[5:] == ["rc=1", "rc=1"]
    assert "Could not find conda environment: nowhere" in done.stderr and "not conda" in done.stderr


def test_official_layout_images_differ_from_venv_images_only_where_the_layout_does():
    inst = next(r for r in ROWS if r["instance_id"] == "pallets__flask-5014")
    plans = {}
    for layout in ("venv", "official"):
        plan = make_plan(inst, "2.3", local_source(DATA / "swebench-repos", inst), "2024-07-25")
        plan.layout = layout
        plans[layout] = plan
    env_df, files = env_dockerfile(plans["official"])
    assert "RUN python3 -m venv /opt/miniconda3/envs/testbed" in env_df and "/opt/venv" not in env_df
    assert files["activate"] == CONDA_ACTIVATE
    last = inst_dockerfile(plans["official"]).rstrip().splitlines()[-1]
    assert last == "ENV PATH=/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert env_dockerfile(plans["venv"])[0].replace("/opt/venv", "/opt/miniconda3/envs/testbed").count("uv pip") == (
        env_df.count("uv pip")
    )

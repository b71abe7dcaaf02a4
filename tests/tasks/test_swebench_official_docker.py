"""Official-image mode on the real Docker daemon and a real registry, as a team's cluster would run it.

Two instances (psf/requests 2.27 on Python 3.9, pallets/flask 2.3 on 3.11) are built here in the published
sweb.eval layout (`--build --image official`: the environment at /opt/miniconda3/envs/testbed, activated by
`source /opt/miniconda3/bin/activate; conda activate testbed`, the repo at /testbed), tagged with their
official names under a local registry (Debian's docker-registry on 127.0.0.1), pushed, and removed from the
daemon. Then `tasks from-swebench --image official --registry` writes the tasks with no build at all, and
`validate` pulls each image by name: the gold patch resolves, the empty patch does not."""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest
from docker.errors import ImageNotFound

from harness.test_ray_cluster import registry
from paths import DATA, INSTANCES

pytestmark = pytest.mark.docker

REPOS = DATA / "swebench-repos"
IDS = ("pallets__flask-5014", "psf__requests-6028")
SAME_FILES = ("tests/test.sh", "tests/grade.py", "tests/config.json", "solution/solve.sh", "instruction.md")


def test_official_tasks_pull_their_images_by_name_oracle_resolves_nop_does_not(cli, tmp_path):
    client = docker.from_env()
    with registry(tmp_path) as host:
        built = tmp_path / "built"
        res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(built), "--build", "--image", "official",
                  "--registry", host, "--repos", str(REPOS), "--task", ",".join(IDS), "--jobs", "2", "--json",
                  use_db=False)  # fmt: skip
        assert res.exit_code == 0, (res.stdout, res.stderr)
        report = json.loads(res.stdout)
        assert report["written"] == list(IDS), report["skipped"]
        assert report["leaks"]["verdicts"] == {"clean": 2}, report["leaks"]  # the official layout scanned too
        names = {}
        for line in report["instances"]:
            name = names[line["task_id"]] = line["official_image"]
            assert name == f"{host}/swebench/sweb.eval.x86_64.{line['task_id'].replace('__', '_1776_')}:latest"
            image = client.images.get(name)
            path = next(e for e in image.attrs["Config"]["Env"] if e.startswith("PATH="))
            assert path == "PATH=/opt/miniconda3/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
            script = "source /opt/miniconda3/bin/activate; conda activate testbed; command -v python; python --version"
            out = client.containers.run(name, ["bash", "-c", script], remove=True).decode().split()
            assert out[0] == "/opt/miniconda3/envs/testbed/bin/python"
            assert out[2].startswith({"psf": "3.9.", "pallets": "3.11."}[line["task_id"].split("__")[0]])
            pushed = client.images.push(name)
            assert '"error"' not in pushed, pushed
            client.images.remove(name)
            client.images.remove(line["image"])  # the content-hash tag too: only the registry has the image now
            with pytest.raises(ImageNotFound):
                client.images.get(name)
        tasks = tmp_path / "tasks"
        res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(tasks), "--image", "official", "--registry",
                  host, "--task", ",".join(IDS), "--json", use_db=False)  # fmt: skip
        assert res.exit_code == 0, res.stderr
        for task_id in IDS:  # what a team writes for the official images is what was built here
            for rel in SAME_FILES:
                assert (tasks / task_id / rel).read_text() == (built / task_id / rel).read_text(), rel
            assert f'docker_image = "{names[task_id]}"' in (tasks / task_id / "task.toml").read_text()
        runs = tmp_path / "runs"
        res = cli("validate", str(tasks), "--attempts", "1", "--runs-dir", str(runs), "--json")
        assert res.exit_code == 0, (res.stdout, res.stderr)
    rows = {r["task_id"]: r for r in json.loads(res.stdout)["tasks"]}
    assert set(rows) == set(IDS)
    for task_id, row in rows.items():
        assert row["verdict"] == "ok", (task_id, row)
        assert row["details"]["oracle"]["resolved"] == 1 and row["details"]["nop"]["resolved"] == 0
        assert client.images.get(names[task_id])  # pulled by name
    logs = {p.parent.parent.name: p.read_text() for p in Path(runs).glob("*/*/verifier/test-stdout.txt")}
    assert logs and all("+ conda activate testbed" in log for log in logs.values())
    for task_id in IDS:
        client.images.remove(names[task_id])

"""Lock files on the real Docker daemon: psf__requests-6028 (Python 3.9, pure Python) built, then rebuilt
from its lock file into a new image: the same lock and, under `validate` with both images as variants, the
same per-test statuses. A lock whose base image is another one (a debootstrap made elsewhere) rebuilds into
an image that the build names as a variant of the locked one, with what changed."""

from __future__ import annotations

import json
import shutil

import docker
import pytest

from paths import DATA, INSTANCES
from trialbook.tasks.swebench.lockfile import IDENTITY, LOCK_FILE

pytestmark = pytest.mark.docker

REPOS = DATA / "swebench-repos"
ID = "psf__requests-6028"


def build(cli, out, *args: str) -> dict:
    res = cli("tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--build", "--repos", str(REPOS),
              "--task", ID, *args, "--no-scan-leaks", "--json", use_db=False)  # fmt: skip
    assert res.exit_code == 0, (res.stdout, res.stderr)
    (line,) = json.loads(res.stdout)["instances"]
    assert line["status"] == "built", line
    return line


def test_a_rebuild_from_the_lock_is_the_same_environment_with_the_same_test_statuses(cli, tmp_path):
    first_line = build(cli, tmp_path / "first")
    assert first_line["lock"] == "written" and first_line["python"].startswith("3.9.")
    lock = json.loads((tmp_path / "first" / ID / LOCK_FILE).read_text())
    base_id = docker.from_env().images.get("trialbook-swe-base:bullseye").id
    assert (lock["python"], lock["suite"], lock["base_image_id"]) == (first_line["python"], "bullseye", base_id)
    assert "pytest==7.4.4" in lock["packages"]  # the spec's conda `pytest`, as of conda's date
    assert lock["local"] == ["requests @ file:///testbed"] and lock["image"] == first_line["image"]

    again = build(cli, tmp_path / "again", "--from-lock", str(tmp_path / "first"))
    assert again["lock"] == "same" and "lock_changes" not in again
    assert again["image"] != first_line["image"]  # a new image: the environment installed from the lock
    relock = json.loads((tmp_path / "again" / ID / LOCK_FILE).read_text())
    assert {k: relock[k] for k in IDENTITY} == {k: lock[k] for k in IDENTITY}

    args = ["validate", str(tmp_path / "again"), "--attempts", "1", "--runs-dir", str(tmp_path / "runs"), "--json"]
    res = cli(*args, "--image-variant", f"first={first_line['image']}", "--image-variant", "rebuilt=")
    assert res.exit_code == 0, (res.stdout, res.stderr)
    result = json.loads(res.stdout)
    assert sorted((r["variant"], r["verdict"]) for r in result["tasks"]) == [("first", "ok"), ("rebuilt", "ok")]
    assert result["variant_differences"] == []  # every test: the same status in both images
    graded = [json.loads(p.read_text())["tests"] for p in (tmp_path / "runs").glob("*/*/result.json")]
    assert len(graded) == 4 and all(len(t["PASS_TO_PASS"]) > 50 for t in graded)


def test_a_rebuild_on_another_base_is_named_a_variant_of_the_locked_image(cli, tmp_path):
    build(cli, tmp_path / "first")
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "first", moved)
    lock_path = moved / ID / LOCK_FILE
    lock = json.loads(lock_path.read_text())
    lock_path.write_text(json.dumps({**lock, "base_image_id": "sha256:" + "0" * 64}))
    line = build(cli, tmp_path / "again", "--from-lock", str(moved))
    assert line["lock"] == "changed"
    assert line["lock_changes"] == [f"base_image_id: sha256:{'0' * 64} -> {lock['base_image_id']}"]
    assert line["locked_image"] == lock["image"]

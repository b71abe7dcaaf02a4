"""`tasks from-swebench --build` end to end on the real Docker daemon: one Python 3.9 instance
(psf/requests 2.27) and one 3.11 instance (pallets/flask 2.3) built from the shared sources, then
`validate --repeats 2`: the gold patch resolves, the empty patch does not. First run on a bare
machine: two debootstraps and two environments, a few minutes; later runs find the images by hash."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import docker
import pytest
from typer.testing import CliRunner

from paths import DATA, INSTANCES
from trialbook.cli import load

app = load()

pytestmark = pytest.mark.docker

REPOS = DATA / "swebench-repos"
IDS = ("psf__requests-6028", "pallets__flask-5014")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    base = tmp_path_factory.mktemp("swebuild")
    out = base / "tasks"
    args = ["tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--build", "--repos", str(REPOS)]
    res = CliRunner().invoke(app, [*args, "--ids", ",".join(IDS), "--jobs", "2", "--json"])
    assert res.exit_code == 0, (res.stdout, res.exception)
    report = json.loads(res.stdout)
    again = CliRunner().invoke(app, [*args, "--ids", IDS[0], "--no-scan-leaks", "--json"])  # found, not rebuilt
    assert again.exit_code == 0, again.stdout
    return base, out, report, json.loads(again.stdout)


def test_both_instances_built_with_the_python_their_spec_asks_for(built):
    _, out, report, _ = built
    assert report["written"] == list(IDS) or sorted(report["written"]) == sorted(IDS), report["skipped"]
    client = docker.from_env()
    for line in report["instances"]:
        image = line["image"]
        assert image.startswith(f"trialbook-swe-{line['task_id']}:")
        version = client.containers.run(image, ["python", "--version"], remove=True).decode()
        assert version.startswith({"psf/requests": "Python 3.9.", "pallets/flask": "Python 3.11."}[line["repo"]])
        toml = (out / line["task_id"] / "task.toml").read_text()
        assert f'docker_image = "{image}"' in toml
    status = client.containers.run(report["instances"][0]["image"], ["git", "status", "--short"], remove=True)
    assert status.decode().strip() == ""  # the repository at base_commit, nothing changed by the install
    saved = json.loads((out / "swebench-build.json").read_text())
    assert {x["task_id"] for x in saved["instances"]} == set(IDS)


def test_the_images_built_are_scanned_for_their_answer_and_clean(built):
    """--build scans what it built (verify/leaks.py): no gold line in any git object, file or archive of either."""
    _, _, report, again = built
    rows = {t["task_id"]: t for t in report["leaks"]["tasks"]}
    assert report["leaks"]["verdicts"] == {"clean": 2}, rows
    assert all(rows[i]["lines"] >= 1 and rows[i]["hits"] == [] for i in IDS)
    assert "leaks" not in again  # --no-scan-leaks


def test_same_recipe_is_found_by_its_content_hash_not_rebuilt(built):
    _, _, report, again = built
    first = next(x for x in report["instances"] if x["task_id"] == IDS[0])
    (line,) = again["instances"]
    assert line["image"] == first["image"] and line["env_image"] == first["env_image"]
    assert line["env_build_s"] == 0.0 and line["instance_build_s"] == 0.0


def test_validate_oracle_resolves_nop_does_not(built, tmp_path):
    _, out, _, _ = built
    args = ["validate", str(out), "--repeats", "2", "--runs-dir", str(tmp_path / "runs"), "--json"]
    res = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "l.db")])
    assert res.exit_code == 0, res.stdout
    rows = {r["task_id"]: r for r in json.loads(res.stdout)["tasks"]}
    assert set(rows) == set(IDS)
    for task_id, row in rows.items():
        assert row["verdict"] == "ok", (task_id, row)
        assert row["details"]["oracle"]["resolved"] == 2 and row["details"]["nop"]["resolved"] == 0
    trial = json.loads(next(Path(tmp_path / "runs").glob(f"*/*{IDS[1]}-0-*/result.json")).read_text())
    assert len(trial["tests"]["PASS_TO_PASS"]) == 59 and set(trial["tests"]["PASS_TO_PASS"].values()) == {"pass"}
    # the verifier's canary (verify/canary.py) ran in each real suite and failed, gold patch and empty patch alike
    results = Path(tmp_path / "runs").glob("*/*/result.json")
    seen = [json.loads(p.read_text())["extra"]["canary"]["seen"] for p in results]
    assert seen == ["failed"] * 8


def test_old_requests_suite_runs_against_the_local_httpbin_without_a_network(tmp_path):
    """requests-1921's test file reads HTTPBIN_URL: the verifier (fresh container, --network none)
    starts the image's httpbin on 127.0.0.1 and every listed test passes but the two that need TLS."""
    instance_id = "psf__requests-1921"
    out = tmp_path / "tasks"
    args = ["tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--build", "--repos", str(REPOS)]
    res = CliRunner().invoke(app, [*args, "--ids", instance_id, "--json"])
    assert res.exit_code == 0, (res.stdout, res.exception)
    assert "HTTPBIN_URL=http://127.0.0.1:8765/" in (out / instance_id / "tests" / "test.sh").read_text()
    args = ["validate", str(out), "--repeats", "1", "--runs-dir", str(tmp_path / "runs"), "--json"]
    res = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "l.db")])
    assert res.exit_code == 1, res.stdout
    (row,) = json.loads(res.stdout)["tasks"]
    assert row["verdict"] == "oracle_fails"  # https://httpbin.org and an https URL on httpbin's host
    not_passing = {}
    for path in Path(tmp_path / "runs").glob("*/*/result.json"):
        trial = json.loads(path.read_text())
        tests = {t: s for group in trial["tests"].values() for t, s in group.items()}
        assert len(tests) == 113
        not_passing[trial["agent_info"]["name"]] = {t.split("::")[-1] for t, s in tests.items() if s != "pass"}
    tls = {"test_mixed_case_scheme_acceptable", "test_pyopenssl_redirect"}
    assert not_passing["oracle"] == tls  # was 43 of 113 with httpbin.org unreachable
    assert not_passing["nop"] == tls | {"test_headers_on_session_with_None_are_not_sent"}  # the F2P the fix makes pass


def test_pytest_repository_reinstalls_offline_and_a_runner_made_a_no_op_is_caught(tmp_path):
    """pytest-dev__pytest-7490, where the code under test is the runner: the eval script's offline re-install
    succeeds (setuptools-scm and wheel beside the environment), the gold patch resolves with the canary failing
    and no conflict tag for its inner runs' `test_this`, and a "fix" that makes pytest's own test call a no-op,
    resolved before the canary (checked on 15e458d), is graded as failing."""
    instance_id = "pytest-dev__pytest-7490"
    out = tmp_path / "tasks"
    args = ["tasks", "from-swebench", str(INSTANCES), "--out", str(out), "--build", "--repos", str(REPOS)]
    res = CliRunner().invoke(app, [*args, "--ids", instance_id, "--json"])
    assert res.exit_code == 0, (res.stdout, res.exception)
    cheat = tmp_path / "cheat"
    shutil.copytree(out / instance_id, cheat / instance_id)
    (cheat / instance_id / "solution" / "solve.sh").write_text(
        "#!/bin/bash\ncd /testbed\nprintf '\\n\\nFunction.runtest = lambda self: None\\n' >> src/_pytest/python.py\n"
    )
    trials = {}
    for name, tasks in (("gold", out), ("noop", cheat)):
        args = ["run", str(tasks), "--agent", "oracle", "--run", name, "--runs-dir", str(tmp_path / "runs")]
        res = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "l.db"), "--json"])
        assert res.exit_code == 0, res.stdout
        (path,) = Path(tmp_path / "runs" / name).glob("*/result.json")
        trials[name] = json.loads(path.read_text())
    gold, noop = trials["gold"], trials["noop"]
    assert (gold["outcome"], gold["extra"]["canary"]["seen"], gold["extra"]["tags"]) == ("resolved", "failed", [])
    log = next(Path(tmp_path / "runs" / "gold").glob("*/verifier/test-stdout.txt")).read_text()
    assert "Successfully installed pytest" in log and "prepare_metadata_for_build_wheel" not in log
    assert (noop["outcome"], noop["extra"]["canary"]["seen"]) == ("unresolved", "passed")
    assert "runner_subverted" in noop["extra"]["tags"]

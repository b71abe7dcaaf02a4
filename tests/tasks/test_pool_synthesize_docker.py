"""`tasks synthesize` end to end on a real pool repository (addict, 2 candidates: about a minute on an idle
machine, 4 on a loaded one): candidates run against its tests in its built image, a kept one becomes a task folder
that `validate` calls `ok`, its image's repository has one fresh commit and no copy of the original code, and the
pool overlaps no Verified instance."""

from __future__ import annotations

import hashlib
import json
import subprocess
import tomllib

import pytest

from paths import DATA, INSTANCES

pytestmark = pytest.mark.docker

ADDICT = DATA / "pool-repos" / "mewwts__addict.git"


def _in_image(image: str, script: str) -> str:
    done = subprocess.run(["docker", "run", "--rm", "--network", "none", image, "bash", "-c", script],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def test_synthesize_addict_validate_and_leak_check(cli, tmp_path):
    out = tmp_path / "pool"
    r = cli("tasks", "synthesize", str(ADDICT), "--out", str(out), "--max-candidates", "2", "--json", use_db=False)
    assert r.exit_code == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["repo"] == "mewwts/addict" and res["tried"] == 2 and res["baseline_passing"] > 100
    statuses = [c["status"] for c in res["candidates"]]
    assert statuses.count("kept") == len(res["kept"]) >= 1
    assert set(statuses) - {"kept"} <= {"no_test_fails", "same_failing_tests", "breaks_suite", "timeout"}
    assert sum(res["dropped"].values()) == 2 - len(res["kept"])
    assert json.loads((out / "synthesize.json").read_text())["repositories"][0]["repo"] == "mewwts/addict"

    task = out / res["kept"][0]
    config = json.loads((task / "tests" / "config.json").read_text())
    assert config["FAIL_TO_PASS"] and config["PASS_TO_PASS"]
    assert not set(config["FAIL_TO_PASS"]) & set(config["PASS_TO_PASS"])
    assert len(config["FAIL_TO_PASS"]) + len(config["PASS_TO_PASS"]) == res["baseline_passing"]
    assert config["FAIL_TO_PASS"][0] in (task / "instruction.md").read_text()
    image = tomllib.loads((task / "task.toml").read_text())["environment"]["docker_image"]

    # the sandbox's repository: one commit of the buggy tree; the original file is neither in git nor on disk
    changed = (task / "solution" / "solve.sh").read_text().split("diff --git a/")[1].split()[0]
    original = subprocess.run(["git", "-C", str(ADDICT), "show", f"base:{changed}"], capture_output=True,
                              check=True).stdout  # fmt: skip
    blob = subprocess.run(["git", "hash-object", "--stdin"], input=original, capture_output=True, check=True)
    probe = (f"cd /testbed && git rev-list --all | wc -l && git log --format=%an && git status --porcelain | wc -l"
             f" && (git cat-file -e {blob.stdout.decode().strip()} 2>/dev/null && echo has-blob || echo no-blob)"
             f" && sha256sum {changed} | cut -c1-64")  # fmt: skip
    lines = _in_image(image, probe).splitlines()

    assert lines[:4] == ["1", "trialbook", "0", "no-blob"]
    assert lines[4] != hashlib.sha256(original).hexdigest()
    where = "/testbed /opt /root /tmp /usr/local /etc"  # where a build leaves files (the base image's are fixed)
    found = _in_image(image, f"grep -rlF {json.dumps(res['commit'])} {where} || true")
    assert found == ""  # the original commit id is nowhere there either

    v = cli("validate", str(out), "--task", task.name, "--attempts", "1", "--runs-dir", str(tmp_path / "runs"),
            "--json")  # fmt: skip
    assert v.exit_code == 0, v.stdout + v.stderr
    assert [t["verdict"] for t in json.loads(v.stdout)["tasks"]] == ["ok"]

    o = cli("tasks", "overlap", str(out), str(INSTANCES), "--json", use_db=False)
    assert o.exit_code == 0, o.stderr
    audit = json.loads(o.stdout)
    assert audit["pairs"] == [] and audit["repos_shared"] == [] and audit["in_overlap"] == []

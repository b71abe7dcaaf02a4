"""`tasks from-swebench --build`: bad input is one line and exit 2 before any image is built, and
nothing is left in --out. Real git repositories (the shared SWE-bench sources), no Docker needed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from paths import DATA, INSTANCES

REPOS = DATA / "swebench-repos"
REQUESTS = "psf__requests-6028"


def one_instance(tmp_path: Path, instance_id: str, **changes: str) -> Path:
    for line in INSTANCES.read_text().splitlines():
        row = json.loads(line)
        if row["instance_id"] == instance_id:
            path = tmp_path / f"{instance_id}.jsonl"
            path.write_text(json.dumps({**row, **changes}) + "\n")
            return path
    raise AssertionError(f"{instance_id} not in {INSTANCES}")


def build(cli, instances: Path, out: Path, *args: str):
    return cli("tasks", "from-swebench", str(instances), "--out", str(out), "--build", *args, "--json", use_db=False)


def assert_one_line_exit_2(res, out: Path, *words: str) -> None:
    assert res.exit_code == 2, (res.stdout, res.stderr)
    line = res.stderr.strip()
    assert "\n" not in line and "Traceback" not in line, line
    for w in words:
        assert w in line, line
    assert not out.exists(), "nothing may be written on bad input"
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.tmp-")]


def test_unknown_instance_id(cli, tmp_path):
    out = tmp_path / "out"
    res = build(cli, INSTANCES, out, "--repos", str(REPOS), "--ids", f"{REQUESTS},psf__requests-99999")
    assert_one_line_exit_2(res, out, "psf__requests-99999", "unknown instance id")


def test_repos_folder_without_the_repository(cli, tmp_path):
    (tmp_path / "repos").mkdir()
    shutil.copytree(REPOS / "pallets__flask.git", tmp_path / "repos" / "pallets__flask.git")
    out = tmp_path / "out"
    res = build(cli, one_instance(tmp_path, REQUESTS), out, "--repos", str(tmp_path / "repos"))
    assert_one_line_exit_2(res, out, "psf__requests.git", REQUESTS)


def test_a_repository_git_cannot_read_is_named_as_such(cli, tmp_path):
    """The shared pydata__xarray.git came without its (empty) refs/ folder: git does not see a repository there,
    which is what the line says (not a missing base commit)."""
    repo = tmp_path / "repos" / "psf__requests.git"
    shutil.copytree(REPOS / "psf__requests.git", repo)
    shutil.rmtree(repo / "refs")
    out = tmp_path / "out"
    res = build(cli, one_instance(tmp_path, REQUESTS), out, "--repos", str(tmp_path / "repos"))
    assert_one_line_exit_2(res, out, "not a repository git can read", f"mkdir -p {repo}/refs")


def test_repos_is_not_a_folder(cli, tmp_path):
    out = tmp_path / "out"
    res = build(cli, one_instance(tmp_path, REQUESTS), out, "--repos", str(tmp_path / "nowhere"))
    assert_one_line_exit_2(res, out, "is not a folder")


def test_base_commit_missing_from_the_repository(cli, tmp_path):
    out = tmp_path / "out"
    missing = "0123456789abcdef0123456789abcdef01234567"
    res = build(cli, one_instance(tmp_path, REQUESTS, base_commit=missing), out, "--repos", str(REPOS))
    assert_one_line_exit_2(res, out, missing, "does not hold base commit")


def test_no_network_for_the_upstream_fetch(cli, tmp_path, monkeypatch):
    # git's own configuration sends the fetch to a closed port: a real "no network" failure anywhere
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "http.proxy")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9")
    out = tmp_path / "out"
    res = build(cli, one_instance(tmp_path, REQUESTS), out)
    assert_one_line_exit_2(res, out, "cannot fetch", "https://github.com/psf/requests.git", "--repos")
    assert os.environ["GIT_CONFIG_KEY_0"] == "http.proxy"


def test_python_no_debian_release_provides_is_refused_per_instance(cli, tmp_path):
    # astropy 1.3 asks for Python 3.6 and django 2.2 for 3.5 in swebench's specs
    rows = [json.loads(x) for x in INSTANCES.read_text().splitlines()]
    picked = [r for r in rows if r["instance_id"] in ("astropy__astropy-7166", "django__django-10097")]
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    out = tmp_path / "out"
    res = build(cli, path, out, "--repos", str(REPOS))
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["written"] == []
    lines = {x["task_id"]: x for x in report["skipped"]}
    assert set(lines) == {"astropy__astropy-7166", "django__django-10097"}
    for line in lines.values():
        assert line["status"] == "refused"
        assert "which no Debian release here provides (bullseye 3.9, bookworm 3.11)" in line["reason"]
    assert sorted(p.name for p in out.iterdir()) == ["swebench-build.json"]


def test_a_bad_lock_file_is_one_line_and_exit_2(cli, tmp_path):
    folder = tmp_path / "locks" / REQUESTS / "environment"
    folder.mkdir(parents=True)
    (folder / "swebench.lock.json").write_text(json.dumps({"lock_version": 1, "packages": ["pytest>=7"]}))
    out = tmp_path / "out"
    locks = str(tmp_path / "locks")
    res = build(cli, one_instance(tmp_path, REQUESTS), out, "--repos", str(REPOS), "--from-lock", locks)
    assert_one_line_exit_2(res, out, "name==version", "swebench.lock.json")


def test_a_missing_lock_file_is_one_line_and_exit_2(cli, tmp_path):
    (tmp_path / "locks").mkdir()
    out = tmp_path / "out"
    locks = str(tmp_path / "locks")
    res = build(cli, one_instance(tmp_path, REQUESTS), out, "--repos", str(REPOS), "--from-lock", locks)
    assert_one_line_exit_2(res, out, "no lock file", REQUESTS)

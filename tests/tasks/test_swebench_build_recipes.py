"""The recipes `tasks from-swebench --build` writes (Dockerfiles, test.sh in the venv), from the real
swebench specs and the shared repositories; no Docker needed."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from paths import DATA, INSTANCES
from trialbook.tasks.swebench.build_images import env_dockerfile, inst_dockerfile, key_plan
from trialbook.tasks.swebench.build_plan import DEFAULT_EXCLUDE_NEWER, conda_to_pip, make_plan
from trialbook.tasks.swebench.generate import build_task_toml, build_test_sh
from trialbook.tasks.swebench.versions import VERSIONS

REPOS = DATA / "swebench-repos"
SHELLCHECK = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")


def instance(instance_id: str) -> dict:
    for line in INSTANCES.read_text().splitlines():
        row = json.loads(line)
        if row["instance_id"] == instance_id:
            return row
    raise AssertionError(instance_id)


def plan_for(instance_id: str, date: str = DEFAULT_EXCLUDE_NEWER):
    inst = instance(instance_id)
    repo = REPOS / f"{inst['repo'].replace('/', '__')}.git"
    plan = make_plan(inst, VERSIONS[instance_id], repo, date)
    key_plan(plan)
    return plan


def test_venv_test_sh_has_no_conda_and_reinstalls_offline(tmp_path):
    inst = instance("psf__requests-6028")
    script = build_test_sh(inst, VERSIONS[inst["instance_id"]], venv=True)
    assert "conda" not in script.split("set -uxo pipefail")[1]
    assert "source /opt/venv/bin/activate" in script and "PY=/opt/venv/bin/python" in script
    assert "python -m pip install --no-build-isolation --no-deps --no-index ." in script
    path = tmp_path / "test.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
    done = subprocess.run([SHELLCHECK, str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_sphinx_edits_run_one_by_one_and_stay_uncommitted():
    plan = plan_for("sphinx-doc__sphinx-7910")
    dockerfile = inst_dockerfile(plan)
    assert f"FROM {plan.env_tag}" in dockerfile
    assert "RUN sed -i 's/pytest/pytest -rA/' tox.ini" in dockerfile
    assert "git commit" not in dockerfile
    install = [ln for ln in dockerfile.splitlines() if "-e .[test]" in ln]
    assert len(install) == 1 and "uv pip install" in install[0] and "--exclude-newer 2024-07-25" in install[0]
    assert "SETUPTOOLS_SCM_PRETEND_VERSION_FOR_SPHINX=3.2.0" in dockerfile


def test_exact_pins_escape_the_date_and_conda_packages_use_the_channel_date():
    flask = env_dockerfile(plan_for("pallets__flask-5014"))[0]
    assert "--exclude-newer-package setuptools=2100-01-01" in flask  # setuptools==70.0.0 is newer than the cutoff
    requests = env_dockerfile(plan_for("psf__requests-6028"))[0]
    assert "--exclude-newer-package pytest=2024-01-15" in requests  # the spec's conda `packages: pytest`
    assert conda_to_pip("pytest numpy=1.19 scipy==1.5 six>=1") == ["pytest", "numpy==1.19.*", "scipy==1.5", "six>=1"]


def test_requirements_come_from_the_repository_and_key_the_environment():
    plan = plan_for("pylint-dev__pylint-7080")
    assert plan.requirements and "pytest" in plan.requirements  # requirements_test*.txt at base_commit
    files = env_dockerfile(plan)[1]
    assert files["requirements.txt"].startswith(plan.requirements)
    other = plan_for("pylint-dev__pylint-8898")
    assert other.env_key != plan.env_key
    assert plan_for("pylint-dev__pylint-7080").env_key == plan.env_key  # same recipe, same tag
    assert plan_for("pylint-dev__pylint-7080", "2024-01-01").env_key != plan.env_key


def test_tox_python_sees_the_venv_only_where_tox_ini_runs_python_m_pytest():
    new = inst_dockerfile(plan_for("sphinx-doc__sphinx-10323")).splitlines()
    assert new[-1].startswith("RUN /opt/venv/bin/python -c") and "trialbook-venv.pth" in new[-1]
    assert "trialbook-venv.pth" not in inst_dockerfile(plan_for("sphinx-doc__sphinx-7910"))  # tox.ini runs `pytest`


def test_pyproject_only_project_pinning_old_setuptools_installs_editable_with_pip():
    plan = plan_for("pylint-dev__pylint-7277")  # requires setuptools~=62.6: no PEP 660 build_editable
    assert plan.extra.get("legacy_editable") is True
    install = next(line for line in inst_dockerfile(plan).splitlines() if line.endswith("pip install -e ."))
    assert "&& python -m pip install -e ." in install and "uv pip install" in install
    assert not plan_for("pylint-dev__pylint-8898").extra.get("legacy_editable")  # setuptools~=66.1 has it


def test_local_httpbin_only_for_requests_test_files_that_read_httpbin_url(tmp_path):
    with_knob = ("psf__requests-1724", "psf__requests-1766", "psf__requests-1921", "psf__requests-2317")
    for instance_id in with_knob:
        plan = plan_for(instance_id)
        assert plan.extra.get("httpbin") is True, instance_id
        dockerfile = inst_dockerfile(plan).splitlines()
        # its own venv of the system Python, resolved as of the build date, before the per-instance layers
        assert dockerfile[1].startswith("RUN /usr/bin/python3 -m venv /opt/httpbin && uv pip install")
        assert "--exclude-newer 2024-07-25 httpbin" in dockerfile[1]
        assert "/opt/venv" not in dockerfile[1]  # the repo's environment is not touched
        script = build_test_sh(plan.inst, plan.version, venv=True, httpbin=True)
        lines = [ln.strip() for ln in script.splitlines()]
        start = lines.index(": '>>>>> Start Test Output'")
        assert lines[start - 3].startswith("/opt/httpbin/bin/python -m httpbin.core --host 127.0.0.1 --port 8765")
        assert "/dev/tcp/127.0.0.1/8765" in lines[start - 1]  # waits until the server accepts connections
        assert (
            lines[start + 1].startswith("env -u http_proxy")
            and " HTTPBIN_URL=http://127.0.0.1:8765/ " in lines[start + 1]
        )
        assert lines[start + 1].endswith("pytest -rA test_requests.py")
        assert lines[start + 2] == ": '>>>>> End Test Output'" and lines[start + 3] == 'kill "$HTTPBIN_PID"'
        assert script.count("HTTPBIN_URL") == 1  # the test line only
        path = tmp_path / f"{instance_id}.sh"
        path.write_text(script)
        done = subprocess.run([SHELLCHECK, str(path)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout
    # newer requests test suites use the pytest-httpbin fixture, other repos have no such variable
    for instance_id in ("psf__requests-2931", "psf__requests-5414", "psf__requests-6028", "pallets__flask-5014"):
        plan = plan_for(instance_id)
        assert "httpbin" not in plan.extra, instance_id
        assert "/opt/httpbin" not in inst_dockerfile(plan)
        assert "HTTPBIN" not in build_test_sh(plan.inst, plan.version, venv=True)


def test_the_unroutable_network_only_for_test_files_that_connect_to_the_tarpit_address():
    # requests' TARPIT (10.255.255.1): the test expects the connect to time out, which a sandbox without a network
    # answers at once (sandbox/docker.py UNROUTABLE_NETWORK)
    for instance_id in ("psf__requests-2317", "psf__requests-2931", "psf__requests-5414"):
        plan = plan_for(instance_id)
        assert plan.extra.get("unroutable_network") is True, instance_id
        toml = tomllib.loads(build_task_toml(plan.inst, plan.version, "img:tag", unroutable=True))
        assert toml["environment"]["unroutable_network"] is True and "allow_network" not in toml["environment"]
    # the older requests files have no such test, 6028 changes tests/test_utils.py only, other repos none
    for instance_id in ("psf__requests-1724", "psf__requests-1921", "psf__requests-6028", "pallets__flask-5014"):
        plan = plan_for(instance_id)
        assert "unroutable_network" not in plan.extra, instance_id
        assert "unroutable" not in build_task_toml(plan.inst, plan.version, "img:tag")


def test_the_build_requirements_the_offline_reinstall_needs_are_installed_beside_the_environment():
    # pytest's eval script re-installs the tree with `--no-build-isolation --no-index` (no network in the
    # sandbox): without setuptools-scm and wheel in the venv that failed in 16 of its 19 instances here
    plan = plan_for("pytest-dev__pytest-7490")
    assert plan.extra["build_requires"] == ["setuptools-scm", "wheel"]  # not setuptools: the venv's stays
    lines = inst_dockerfile(plan).splitlines()
    run = next(line for line in lines if "trialbook-installed.txt" in line)
    assert lines.index(run) > next(i for i, line in enumerate(lines) if "uv pip install" in line and " -e ." in line)
    assert "uv pip freeze --python /opt/venv/bin/python" in run and "-c /tmp/trialbook-installed.txt" in run
    assert "--exclude-newer " in run and run.endswith("; } && rm /tmp/trialbook-installed.txt")
    # setuptools before 70.1 (the venv's: 44.1.1) asks for wheel to prepare metadata, listed or not
    assert plan_for("pytest-dev__pytest-10356").extra["build_requires"] == ["setuptools-scm[toml]>=6.2.3", "wheel"]
    # flit: no wheel; no setup.py: a pip that installs `-e` through PEP 660 (Debian's bundled 20.3 does not)
    assert plan_for("mwaskom__seaborn-3069").extra["build_requires"] == ["flit_core<4,>=3.2", "pip>=21.3"]
    assert "build_requires" not in plan_for("psf__requests-6028").extra  # no pyproject.toml: nothing added

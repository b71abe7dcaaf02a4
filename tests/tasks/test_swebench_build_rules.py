"""`--build` rules for the compiled and conda repositories, on the real specs and shared repositories (no Docker):
the Python rule, the C toolchain for trees with compiled sources, environment.yml read and installed from PyPI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from paths import DATA, INSTANCES
from trialbook.tasks.swebench.build_images import TOOLCHAIN, env_dockerfile, exact_pins, uv_install
from trialbook.tasks.swebench.build_plan import (
    CONDA_EXCLUDE_NEWER,
    local_source,
    make_plan,
    python_for,
    refusal,
)
from trialbook.tasks.swebench.versions import VERSIONS

REPOS = DATA / "swebench-repos"
ROWS = {r["instance_id"]: r for r in map(json.loads, INSTANCES.read_text().splitlines())}


@pytest.mark.parametrize(
    ("asked", "used"),
    [("3.9", "3.9"), ("3.11", "3.11"), ("3.10", "3.9"), ("3.8", "3.9"), ("3.7", "3.9"), ("3.12", "3.11"),
     ("3.13", "3.11"), ("3.6", None), ("3.5", None), ("2.7", None), ("x", None)],
)  # fmt: skip
def test_python_rule_nearest_older_on_a_tie_within_two(asked, used):
    assert python_for(asked) == used


def test_xarray_is_no_longer_refused_astropy_1_3_still_is():
    xarray = ROWS["pydata__xarray-6599"]
    assert refusal(xarray, VERSIONS["pydata__xarray-6599"]) is None  # Python 3.10 and environment.yml
    reason = refusal(ROWS["astropy__astropy-7166"], "1.3")
    assert reason is not None and "needs Python 3.6" in reason and "at most 2 minor versions away" in reason


def plan_for(instance_id: str, repos: Path = REPOS):
    inst = ROWS[instance_id]
    return make_plan(inst, VERSIONS[instance_id], local_source(repos, inst), "2024-07-25")


def test_astropy_gets_a_toolchain_sphinx_with_its_pyx_fixture_does_not():
    astropy = plan_for("astropy__astropy-14309")
    dockerfile = env_dockerfile(astropy)[0].splitlines()
    assert astropy.extra["toolchain"] and dockerfile[2] == f"RUN {TOOLCHAIN}"  # right after FROM/LABEL: shared
    assert "python3-dev" in TOOLCHAIN
    sphinx = plan_for("sphinx-doc__sphinx-7910")  # tests/roots/test-ext-autodoc/target/cython.pyx
    assert "toolchain" not in sphinx.extra and TOOLCHAIN not in env_dockerfile(sphinx)[0]


@pytest.fixture(scope="module")
def xarray_repos(tmp_path_factory):
    """The shared xarray repository lacks its (empty) refs/ folder, which git needs to see a repository: a copy
    with it added (the data issue is reported; nothing in the trees is changed)."""
    src = REPOS / "pydata__xarray.git"
    if not src.is_dir():
        pytest.skip("no shared pydata__xarray.git")
    repos = tmp_path_factory.mktemp("repos")
    dest = repos / "pydata__xarray.git"
    shutil.copytree(src, dest)
    subprocess.run(["chmod", "-R", "u+w", str(dest)], check=True)
    (dest / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (dest / "refs" / "tags").mkdir(exist_ok=True)
    return repos


def test_xarray_environment_yml_is_installed_from_pypi_as_of_condas_date(xarray_repos):
    plan = plan_for("pydata__xarray-6599", xarray_repos)
    assert plan.suite == "bullseye"  # asked 3.10: the older of the two nearest
    env = plan.extra["conda_env"]
    assert {"dask", "matplotlib", "scitools-iris", "netcdf4", "numbagg"} <= set(env)  # mapped, and the pip: list
    assert not {"dask-core", "matplotlib-base", "iris"} & set(env)
    assert plan.extra["debian_packages"] == ["libeccodes0"]  # cfgrib's C library (conda installs it beside)
    assert (
        "RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends libeccodes0"
        in (env_dockerfile(plan)[0])
    )
    assert plan.extra["conda_left_out"] == ["cdms2", "hdf5", "pip"]
    install = uv_install("x", plan)
    assert f"--exclude-newer-package zarr={CONDA_EXCLUDE_NEWER}" in install
    assert "numpy" in exact_pins(plan) and f"numpy={CONDA_EXCLUDE_NEWER}" not in install  # the spec's pin wins
    assert "--exclude-newer-package numpy=2100-01-01" in install

"""`--build` rules for the compiled and conda repositories, on the real specs and shared repositories (no Docker):
the Python rule, the C toolchain for trees with compiled sources, environment.yml read and installed from PyPI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from paths import DATA, INSTANCES
from trialbook.tasks.swebench.build_images import (
    CCACHE_ENV,
    TOOLCHAIN,
    content_key,
    env_dockerfile,
    exact_pins,
    uv_install,
)
from trialbook.tasks.swebench.build_plan import (
    CONDA_EXCLUDE_NEWER,
    conda_to_pip,
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
    assert dockerfile[3] == CCACHE_ENV and "python3-dev" in TOOLCHAIN
    # ccache answers the compiler names setuptools and sysconfig call, from a folder ahead of /usr/bin on PATH
    assert "ln -s /usr/bin/ccache /usr/local/bin/x86_64-linux-gnu-gcc" in TOOLCHAIN
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


def test_a_version_shares_one_environment_file_read_at_its_newest_base_commit(xarray_repos):
    """swebench builds one environment per version, from the environment.yml at its environment_setup_commit; the
    shared rows lack that field, so the newest base commit of the version holding the file stands for it: xarray
    0.12's older commits (3095: only ci/requirements/py3*.yml) are built, and 3993's `h5py=2` is not what all get."""
    rows = list(ROWS.values())
    plans = {}
    for n in ("2905", "3095", "3993", "4687"):
        inst = ROWS[f"pydata__xarray-{n}"]
        plans[n] = make_plan(inst, "0.12", local_source(xarray_repos, inst), "2024-07-25", rows)
    commits = {p.extra["environment_commit"] for p in plans.values()}
    assert commits == {ROWS["pydata__xarray-4687"]["base_commit"]}  # the newest 0.12 base commit (2022-01-18)
    assert len({content_key(*env_dockerfile(p)) for p in plans.values()}) == 1  # one environment image for the version
    # without the other rows an instance reads its own base commit, as before (3095 has none: one clear error)
    alone = ROWS["pydata__xarray-3095"]
    with pytest.raises(ValueError, match="no environment.yml"):
        make_plan(alone, "0.12", local_source(xarray_repos, alone), "2024-07-25")
    # a row naming its environment_setup_commit is read there
    named = {**ROWS["pydata__xarray-3993"], "environment_setup_commit": ROWS["pydata__xarray-2905"]["base_commit"]}
    plan = make_plan(named, "0.12", local_source(xarray_repos, named), "2024-07-25", rows)
    assert plan.extra["environment_commit"] == ROWS["pydata__xarray-2905"]["base_commit"]


def test_condas_fuzzy_pin_is_a_wildcard_and_not_exempt_from_the_date():
    assert conda_to_pip("h5py=2 pip=20.2 numpy==1.23.0 scipy>=1") == ["h5py==2.*", "pip==20.2.*", "numpy==1.23.0",
                                                                    "scipy>=1"]  # fmt: skip
    plan = plan_for("astropy__astropy-14309")
    plan.specs = {**plan.specs, "packages": "h5py=2 numpy==1.23.0", "pip_packages": []}
    assert exact_pins(plan) == ["numpy"]

"""What `tasks from-swebench --build` will build, checked before anything is built or written.

Every instance gets its swebench spec (`MAP_REPO_VERSION_TO_SPECS`), the Debian release whose Python
the spec asks for, its source (a local bare repository or the upstream remote, fetched by sha), and
two content hashes: the environment (base, Python, packages, requirements, resolution date) and the
instance (environment + base commit + setup commands). Bad input fails here, before any image build.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from swebench.harness.constants import MAP_REPO_TO_ENV_YML_PATHS, MAP_REPO_TO_REQS_PATHS, MAP_REPO_VERSION_TO_SPECS
from swebench.harness.test_spec.python import clean_requirements
from swebench.harness.utils import get_modified_files

from trialbook.errors import UserError
from trialbook.tasks.swebench.versions import VERSIONS

# Debian releases that debootstrap can make here, by the Python they ship.
SUITES = {"3.9": "bullseye", "3.11": "bookworm"}
# A spec asking for a Python no release here ships gets the nearest one by minor version, the older on a tie
# (the spec's pinned wheels of its date exist for the older interpreter more often: numpy 1.23.0 has cp39 wheels,
# no cp311 ones), and none further than PYTHON_REACH minor versions away (refused: 3.5, 3.6). The choice is
# recorded on the task (`[metadata] python_asked`, `python`) and in the lock file; validation checks it.
PYTHON_REACH = 2
PYTHON_RULE = f"nearest Python here by minor version, the older on a tie, at most {PYTHON_REACH} minor versions away"


def python_for(asked: str) -> str | None:
    """The Python (a SUITES key) that builds a spec asking for `asked`; None when none is near enough."""
    if asked in SUITES:
        return asked
    try:
        major, minor = (int(x) for x in asked.split(".")[:2])
    except ValueError:
        return None
    near = []
    for have in SUITES:
        hm, hn = (int(x) for x in have.split("."))
        if hm == major and abs(hn - minor) <= PYTHON_REACH:
            near.append((abs(hn - minor), hn, have))
    return min(near)[2] if near else None


# Unpinned packages resolve as of the day the published sweb.eval images were built (an environment
# resolved today is not the one the instances were validated in: today's pytest and docutils break
# flask's and sphinx's suites). Their logs show it: setuptools_scm versions stamped d20240725, and
# sphinx's images with docutils 0.21.2 and pytest 8.3.2 from PyPI.
DEFAULT_EXCLUDE_NEWER = "2024-07-25"
# The spec's `packages` went through conda's defaults channel, which lagged PyPI: its pytest was
# 7.4.4 (the published requests images' logs), PyPI's latest on this date.
CONDA_EXCLUDE_NEWER = "2024-01-15"
UPSTREAM = "https://github.com/{repo}.git"
# Old psf/requests test files take httpbin's address from this variable (default http://httpbin.org/).
HTTPBIN_KNOB = re.compile(r"""environ\.get\(\s*['"]HTTPBIN_URL['"]""")
# The address test suites connect to in order to see a connect time out (requests' and urllib3's TARPIT): the
# internet drops it, a sandbox without a network refuses it at once, so such a task gets the unroutable network.
TARPIT = re.compile(r"(?<![\d.])10\.255\.255\.1(?![\d.])")
GIT_TIMEOUT = 300
VENV = "/opt/venv"
CONDA_ROOT = "/opt/miniconda3"
OFFICIAL_ENV = f"{CONDA_ROOT}/envs/testbed"


@dataclass
class BuildPlan:
    """One instance's build: spec, source and the content hashes that name its images."""

    inst: dict[str, Any]
    version: str
    specs: dict[str, Any]
    suite: str
    source: Path  # a git repository that holds base_commit
    exclude_newer: str
    requirements: str | None = None
    env_key: str = ""
    inst_key: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # "venv": the repo's Python in /opt/venv, first on PATH; "official": the published sweb.eval layout, an
    # environment at /opt/miniconda3/envs/testbed activated by `source /opt/miniconda3/bin/activate; conda activate`
    layout: str = "venv"
    lock: dict[str, Any] | None = None  # rebuild from this lock file (lockfile.py): exactly its packages

    @property
    def venv(self) -> str:
        return OFFICIAL_ENV if self.layout == "official" else VENV

    @property
    def instance_id(self) -> str:
        return str(self.inst["instance_id"])

    @property
    def env_tag(self) -> str:
        return f"trialbook-swe-env:{self.env_key[:16]}"

    @property
    def inst_tag(self) -> str:
        return f"trialbook-swe-{self.instance_id.lower()}:{self.inst_key[:16]}"


def git(args: list[str], cwd: Path | None = None, timeout: float = GIT_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def has_commit(repo: Path, sha: str) -> bool:
    return git(["-C", str(repo), "cat-file", "-e", f"{sha}^{{commit}}"]).returncode == 0


def repo_folder(repos: Path, repo: str) -> Path:
    return repos / f"{repo.replace('/', '__')}.git"


def local_source(repos: Path, inst: dict[str, Any]) -> Path:
    folder = repo_folder(repos, inst["repo"])
    if not (folder / "HEAD").exists() and not (folder / ".git").exists():
        raise UserError(f"--repos {repos} has no repository {folder.name} (needed by {inst['instance_id']})")
    if git(["-C", str(folder), "rev-parse", "--git-dir"]).returncode != 0:
        # git needs HEAD, objects/ and refs/ to see a repository (the shared pydata__xarray.git came without refs/)
        raise UserError(f"{folder} is not a repository git can read (a bare one needs HEAD, objects/ and refs/: "
                        f"`mkdir -p {folder}/refs` if only refs/ is missing)")  # fmt: skip
    if not has_commit(folder, inst["base_commit"]):
        raise UserError(f"{folder} does not hold base commit {inst['base_commit']} of {inst['instance_id']}")
    return folder


def upstream_source(cache: Path, inst: dict[str, Any]) -> Path:
    """A bare repository under `cache` that holds base_commit, fetched by sha with --depth 1."""
    folder = repo_folder(cache, inst["repo"])
    if not folder.exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        git(["init", "-q", "--bare", str(folder)])
    sha = inst["base_commit"]
    if has_commit(folder, sha):
        return folder
    url = UPSTREAM.format(repo=inst["repo"])
    try:
        done = git(["-C", str(folder), "fetch", "-q", "--no-tags", "--depth", "1", url, sha])
    except subprocess.TimeoutExpired:
        raise UserError(f"fetching {sha} of {inst['instance_id']} from {url} timed out") from None
    if done.returncode != 0 or not has_commit(folder, sha):
        raise UserError(
            f"cannot fetch {sha} of {inst['instance_id']} from {url}: {_last_line(done.stderr)} (use --repos DIR)"
        )
    return folder


def read_requirements(source: Path, repo: str, commit: str) -> str:
    """swebench's `get_requirements_by_commit`, reading the files from the local repository, not GitHub."""

    def show(path: str) -> str | None:
        done = git(["-C", str(source), "show", f"{commit}:{path}"])
        return done.stdout if done.returncode == 0 else None

    for req_path in MAP_REPO_TO_REQS_PATHS[repo]:
        text = show(req_path)
        if text is not None:
            break
    else:
        raise ValueError(f"no requirements file at {MAP_REPO_TO_REQS_PATHS[repo]} in {repo} at {commit}")
    req_dir = "/".join(req_path.split("/")[:-1])

    def excluded(line: str) -> bool:
        return any(line.strip().startswith(x) for x in ["-e .", "#", ".[test"])

    original, additional = [], []
    for line in text.split("\n"):
        if line.strip().startswith("-r"):
            extra = show("/".join(p for p in (req_dir, line[2:].strip()) if p))
            additional += [x for x in (extra or "").split("\n") if not excluded(x)]
        elif not excluded(line):
            original.append(line)
    additional.append("\n".join(original))
    cleaned: str = clean_requirements("\n".join(additional))
    return cleaned


# conda-forge names whose PyPI distribution is named otherwise, and conda packages with no PyPI distribution of
# the library (C libraries, conda-only builds): an environment.yml is installed from PyPI without those.
CONDA_PYPI_NAMES = {"dask-core": "dask", "matplotlib-base": "matplotlib", "iris": "scitools-iris", "pytables": "tables"}
CONDA_ONLY = {"hdf5", "cdms2", "pip", "python", "libnetcdf", "eccodes", "gdal", "proj", "geos"}
# conda packages whose C library conda installs beside them: the Debian package of that library. cfgrib's eccodes
# bindings raise RuntimeError("Cannot find the ecCodes library") at import without it, which xarray's
# tests/__init__.py (catching ImportError only) turns into a conftest error: no test runs. (PyPI's ecmwflibs
# wheel needs libglib-2.0, which a minbase Debian lacks: the same error.)
CONDA_C_LIBRARIES = {"cfgrib": ["libeccodes0"]}


def read_environment_yml(source: Path, repo: str, commit: str) -> tuple[list[str], list[str], list[str]]:
    """(pip requirements, conda-only packages left out, Debian packages of C libraries) of the repo's
    environment.yml at `commit` (swebench reads it from GitHub; here from the local repository): conda specs
    `name=1.2` / `name>=1` as pip ones, the `pip:` list as it is."""
    for path in MAP_REPO_TO_ENV_YML_PATHS[repo]:
        done = git(["-C", str(source), "show", f"{commit}:{path}"])
        if done.returncode == 0:
            break
    else:
        raise ValueError(f"no environment.yml at {MAP_REPO_TO_ENV_YML_PATHS[repo]} in {repo} at {commit}")
    try:
        deps = (yaml.safe_load(done.stdout) or {}).get("dependencies") or []
    except (yaml.YAMLError, AttributeError) as exc:
        raise ValueError(f"{repo}'s {path} at {commit} is not a conda environment file: {exc}") from None
    reqs, left_out, debian = [], [], []
    for dep in deps:
        if isinstance(dep, dict):
            reqs += [str(x) for x in dep.get("pip") or []]
            continue
        spec = str(dep).split()[0]
        name = re.split(r"[=<>!~]", spec, maxsplit=1)[0].strip()
        if name.lower() in CONDA_ONLY:
            left_out.append(spec)
            continue
        pip_name = CONDA_PYPI_NAMES.get(name.lower(), name)
        reqs += conda_to_pip(pip_name + spec[len(name) :])
        debian += CONDA_C_LIBRARIES.get(name.lower(), [])
    return reqs, left_out, debian


def conda_to_pip(packages: str) -> list[str]:
    """The spec's `packages` (conda names and match specs) as pip requirements: conda's `name=1.2` is a fuzzy match,
    any 1.2.* (xarray's `h5py=2`: pip's `==2` would ask for 2.0 exactly), `name==1.2` an exact one."""
    out = []
    for p in packages.split():
        fuzzy = re.fullmatch(r"([^=<>!~]+)=([^=<>!~,|*]+)", p)
        out.append(f"{fuzzy[1]}=={fuzzy[2]}.*" if fuzzy else p)
    return out


def env_recipe(plan: BuildPlan) -> dict[str, Any]:
    pkgs = plan.specs.get("packages", "")
    if pkgs == "environment.yml":
        packages = list(plan.extra.get("conda_env", []))
    else:
        packages = [] if pkgs == "requirements.txt" else conda_to_pip(pkgs)
    return {
        "suite": plan.suite,
        "python": plan.specs["python"],
        "packages": packages,
        "requirements": plan.requirements,
        "pip_packages": list(plan.specs.get("pip_packages", [])),
        "exclude_newer": plan.exclude_newer,
    }


def refusal(inst: dict[str, Any], version: str | None) -> str | None:
    """Why this instance cannot be built here (one line), or None."""
    specs = MAP_REPO_VERSION_TO_SPECS.get(inst.get("repo", ""), {}).get(version or "")
    if not specs:
        return f"no swebench spec for {inst.get('repo')} version {version!r}: cannot build its environment"
    python = str(specs.get("python"))
    if python_for(python) is None:
        known = ", ".join(f"{s} {p}" for p, s in SUITES.items())
        rule = f"nor one near enough: {PYTHON_RULE}"
        return f"needs Python {python}, which no Debian release here provides ({known}), {rule}"
    return None


def build_system_requires(source: Path, commit: str) -> list[Requirement]:
    """The project's PEP 518 build requirements at `commit` (none without a readable pyproject.toml), with
    `wheel` added for setuptools' backend: setuptools before 70.1 asks for it to prepare metadata
    (`get_requires_for_build_wheel`), which an isolated build installs and `--no-build-isolation` cannot."""
    done = git(["-C", str(source), "show", f"{commit}:pyproject.toml"])
    if done.returncode != 0:
        return []
    try:
        system = tomllib.loads(done.stdout).get("build-system", {})
        requires = [Requirement(r) for r in system.get("requires", [])]
    except (ValueError, InvalidRequirement, TypeError, AttributeError):
        return []
    backend = str(system.get("build-backend", "setuptools.build_meta"))
    if requires and backend.startswith("setuptools.") and not any(r.name == "wheel" for r in requires):
        requires.append(Requirement("wheel"))
    return requires


def has_setup_py(source: Path, commit: str) -> bool:
    return git(["-C", str(source), "cat-file", "-e", f"{commit}:setup.py"]).returncode == 0


def legacy_editable(requires: list[Requirement], setup_py: bool) -> bool:
    """pyproject-only project (no `setup_py`) whose pinned setuptools (in its build `requires`) predates PEP 660
    (`build_editable`, setuptools 64): pip installs it `-e` with `setup.py develop` through its shim, uv cannot."""
    if setup_py:
        return False
    modern = [f"{major}.{minor}.0" for major in range(64, 81) for minor in (0, 1, 2, 5)]
    pinned = [r for r in requires if r.name == "setuptools" and r.specifier]
    return any(not any(r.specifier.contains(v) for v in modern) for r in pinned)


COMPILED = re.compile(r"\.(c|cc|cpp|pyx)$")


def has_compiled_sources(source: Path, commit: str) -> bool:
    """Whether the tree carries C/C++/Cython sources outside its tests (astropy's extensions; sphinx keeps a .pyx
    test fixture): its install compiles them, so the environment image gets a C toolchain."""
    done = git(["-C", str(source), "ls-tree", "-r", "--name-only", commit])
    return any(COMPILED.search(p) and not {"test", "tests"} & set(p.split("/")[:-1]) for p in done.stdout.splitlines())


def _test_files_say(source: Path, inst: dict[str, Any], pattern: re.Pattern[str]) -> bool:
    """Whether a test file the test patch touches matches `pattern` at base_commit."""
    for path in get_modified_files(inst["test_patch"]):
        done = git(["-C", str(source), "show", f"{inst['base_commit']}:{path}"])
        if done.returncode == 0 and pattern.search(done.stdout):
            return True
    return False


def reads_httpbin_url(source: Path, inst: dict[str, Any]) -> bool:
    """Whether a test file the test patch touches reads HTTPBIN_URL at base_commit (old requests)."""
    return _test_files_say(source, inst, HTTPBIN_KNOB)


def connects_to_tarpit(source: Path, inst: dict[str, Any]) -> bool:
    """Whether a test file the test patch touches, at base_commit or as the patch leaves it, names TARPIT."""
    added = "\n".join(line for line in inst["test_patch"].splitlines() if line.startswith("+"))
    return bool(TARPIT.search(added)) or _test_files_say(source, inst, TARPIT)


def environment_commit(inst: dict[str, Any], version: str, rows: list[dict[str, Any]], source: Path) -> str:
    """The commit whose environment.yml a conda-file spec's environment is built from. swebench reads it at the
    instance's `environment_setup_commit`, one per repository version (the newest instance's base commit of that
    version in the full dataset), so all instances of a version share one environment. Rows without that field
    (the shared data) get the newest base commit, by committer date, among the instances of the same repository and
    version that the repository holds with the file (xarray 0.12's older base commits have only
    ci/requirements/py3*.yml)."""
    if inst.get("environment_setup_commit"):
        return str(inst["environment_setup_commit"])
    same = tuple(
        row["base_commit"]
        for row in rows
        if row["repo"] == inst["repo"] and (row.get("version") or VERSIONS.get(row["instance_id"])) == version
    )
    return _newest_with(source, tuple(MAP_REPO_TO_ENV_YML_PATHS[inst["repo"]]), same) or str(inst["base_commit"])


@cache
def _newest_with(source: Path, paths: tuple[str, ...], commits: tuple[str, ...]) -> str | None:
    """The newest of `commits` (committer date) whose tree holds one of `paths`; once per version, not per instance."""
    dated = []
    for sha in commits:
        if not any(git(["-C", str(source), "cat-file", "-e", f"{sha}:{p}"]).returncode == 0 for p in paths):
            continue
        when = git(["-C", str(source), "show", "-s", "--format=%ct", sha])
        if when.returncode == 0 and when.stdout.strip().isdigit():
            dated.append((int(when.stdout.strip()), sha))
    return max(dated)[1] if dated else None


def make_plan(
    inst: dict[str, Any], version: str, source: Path, exclude_newer: str, rows: list[dict[str, Any]] | None = None
) -> BuildPlan:
    """The plan without its image keys (`build_images.key_plan` names the images from their recipes); `rows`: every
    instance of the instances file (a conda-file spec's environment is read at `environment_commit`)."""
    specs = MAP_REPO_VERSION_TO_SPECS[inst["repo"]][version]
    python = python_for(str(specs["python"]))
    assert python is not None  # refusal() rules the others out
    plan = BuildPlan(inst, version, specs, SUITES[python], source, exclude_newer)
    if specs.get("packages") == "requirements.txt":
        plan.requirements = read_requirements(source, inst["repo"], inst["base_commit"])
    elif specs.get("packages") == "environment.yml":
        commit = environment_commit(inst, version, rows or [inst], source)
        env, left_out, debian = read_environment_yml(source, inst["repo"], commit)
        plan.extra["environment_commit"] = commit
        plan.extra["conda_env"], plan.extra["conda_left_out"] = env, left_out
        if debian:
            plan.extra["debian_packages"] = debian
    if "--current-env" in specs.get("test_cmd", ""):
        tox = git(["-C", str(source), "show", f"{inst['base_commit']}:tox.ini"])
        plan.extra["tox_python"] = tox.returncode == 0 and "-m pytest" in tox.stdout
    requires, setup_py = build_system_requires(source, inst["base_commit"]), has_setup_py(source, inst["base_commit"])
    if " -e " in f" {specs.get('install', '')} " and legacy_editable(requires, setup_py):
        plan.extra["legacy_editable"] = True
    if reads_httpbin_url(source, inst):
        plan.extra["httpbin"] = True
    if connects_to_tarpit(source, inst):
        plan.extra["unroutable_network"] = True
    if has_compiled_sources(source, inst["base_commit"]):
        plan.extra["toolchain"] = True
    # The eval script re-installs the tree offline without build isolation (generate.OFFLINE_PIP), with what the
    # environment holds: pytest's setup.cfg asks for setuptools-scm and its metadata step for wheel, which the
    # isolated build at install time had and the environment has not. The environment's own setuptools stays. A
    # project without setup.py is installed `-e` through PEP 660, which Debian's bundled pip (20.3) does not know.
    needed = sorted(str(r) for r in requires if r.name != "setuptools")
    if needed and not setup_py:
        needed.append("pip>=21.3")
    if needed:
        plan.extra["build_requires"] = needed
    return plan

"""Images for SWE-bench instances built from source: base (debootstrap), environment, instance.

- base `trialbook-swe-base:<suite>`: a debootstrap minbase Debian with python3, venv, git, patch and
  the host's CA bundle (PyPI is reached through it: `SSL_CERT_FILE`, `PIP_CERT`), imported with
  `docker import` (no registry);
- environment `trialbook-swe-env:<hash>`: a virtualenv at /opt/venv with the spec's packages,
  requirements and pip_packages, resolved by uv as of `exclude_newer`;
- instance `trialbook-swe-<id>:<hash>`: the repository at base_commit in /testbed, the spec's
  pre_install and install run there, the edits left uncommitted as in the published sweb.eval images.
Tags are content hashes of the Dockerfile and its context files, so a rebuilt recipe is a new tag
and an unchanged one is found, not rebuilt.
"""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound
from packaging.requirements import InvalidRequirement, Requirement

from trialbook.tasks.swebench.build_plan import CONDA_EXCLUDE_NEWER, BuildPlan, env_recipe, git
from trialbook.tasks.swebench.generate import HTTPBIN_VENV, REPO_DIR
from trialbook.tasks.swebench.official_layout import CONDA_ACTIVATE, official_env_lines, official_inst_tail

HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
IMAGE_CA = "/usr/local/share/trialbook/host-ca.crt"
BASE_PACKAGES = "python3,python3-venv,git,patch,ca-certificates"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
LABEL = "trialbook.swebench"
SYSTEM_PTH = "/usr/lib/python3/dist-packages/trialbook-venv.pth"


# A C toolchain for compiled extensions (astropy): Debian's gcc and the headers of the suite's Python, which is
# the venv's (`python3 -m venv` of the system interpreter).
def apt_install(packages: list[str]) -> str:
    names = " ".join(shlex.quote(p) for p in packages)
    install = f"apt-get install -y -qq --no-install-recommends {names}"
    return f"apt-get update -qq && {install} && rm -rf /var/lib/apt/lists/*"


# ccache answers each compiler by its name from /usr/local/bin (ahead of /usr/bin on every PATH the images set): the
# eval script re-installs the tree in every verifier run (`pip install -e .`), and PEP 660 builds extensions in a
# temporary folder, so without it every run compiled astropy's extensions and wcslib again (~12 min of a trial
# under load). The cache the instance build fills answers those compiles: the same compiler, flags and preprocessed
# sources give the same objects. World-writable, so a shell of another uid that compiles still works.
CCACHE_DIR = "/opt/ccache"
COMPILERS = ("cc", "c++", "gcc", "g++", "x86_64-linux-gnu-gcc", "x86_64-linux-gnu-g++")
TOOLCHAIN = (
    apt_install(["gcc", "g++", "libc6-dev", "python3-dev", "ccache"])
    + " && "
    + " && ".join(f"ln -s /usr/bin/ccache /usr/local/bin/{c}" for c in COMPILERS)
    + f" && mkdir -m 1777 {CCACHE_DIR}"
)
CCACHE_ENV = f"ENV CCACHE_DIR={CCACHE_DIR} CCACHE_UMASK=000 CCACHE_NOHASHDIR=1"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


# docker's "The command '/bin/sh -c <step>' returned a non-zero code: N": a uv step's options fill the whole reason
STEP_FAILED = re.compile(r"The command '/bin/sh -c (.*)' returned a non-zero code: (\d+)", re.S)


def _short_step(m: re.Match[str]) -> str:
    step = re.sub(r" --exclude-newer-package \S+", "", m.group(1))
    return f"step `{step[:160]}{'...' if len(step) > 160 else ''}` exited {m.group(2)}"


class BuildFailed(Exception):
    """An image could not be built; the message is one line with the reason."""


def base_tag(suite: str) -> str:
    return f"trialbook-swe-base:{suite}"


def uv_binary() -> Path:
    found = shutil.which("uv")
    if found is None:
        import sys

        candidate = Path(sys.executable).parent / "uv"
        if candidate.exists():
            return candidate
        raise BuildFailed("no `uv` binary (pip install uv): it resolves packages as of a date")
    return Path(found)


NO_CUTOFF = "2100-01-01"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def exact_pins(plan: BuildPlan) -> list[str]:
    """Names the spec pins to one version (`name==1.2`): the date cutoff must not hide the pinned version."""
    r = env_recipe(plan)
    lines = [*r["packages"], *r["pip_packages"], *(r["requirements"] or "").splitlines()]
    names = set()
    for line in lines:
        try:
            req = Requirement(line.split("#")[0].strip())
        except InvalidRequirement:
            continue
        if any(s.operator == "===" or (s.operator == "==" and not s.version.endswith(".*")) for s in req.specifier):
            names.add(req.name.lower())
    return sorted(names)


def conda_names(plan: BuildPlan) -> list[str]:
    """Packages the official images took from conda's channel (the spec's `packages`), not pinned."""
    names = set()
    for p in env_recipe(plan)["packages"]:
        try:
            req = Requirement(p)
        except InvalidRequirement:
            continue
        if not req.specifier:
            names.add(req.name.lower())
    return sorted(names - set(exact_pins(plan)))  # a version the spec pins is exempt from every cutoff


def uv_install(args: str, plan: BuildPlan) -> str:
    exempt = "".join(f" --exclude-newer-package {n}={NO_CUTOFF}" for n in exact_pins(plan))
    exempt += "".join(f" --exclude-newer-package {n}={CONDA_EXCLUDE_NEWER}" for n in conda_names(plan))
    return f"uv pip install --python {plan.venv}/bin/python --exclude-newer {plan.exclude_newer}{exempt} {args}"


def pip_to_uv(command: str, plan: BuildPlan) -> str:
    """The spec's `python -m pip install ...` as a uv install resolved as of the date."""
    for prefix in ("python -m pip install", "pip install"):
        if command.startswith(prefix):
            return uv_install(command[len(prefix) :].strip(), plan)
    return command


def env_dockerfile(plan: BuildPlan) -> tuple[str, dict[str, str]]:
    """(Dockerfile, extra context files) of the environment image."""
    r = env_recipe(plan)
    d = plan
    venv = plan.venv
    files: dict[str, str] = {}
    lines = [
        f"FROM {base_tag(r['suite'])}",
        f"LABEL {LABEL}=env",
        *([f"RUN {TOOLCHAIN}", CCACHE_ENV] if plan.extra.get("toolchain") else []),  # first: one layer per suite
        *([f"RUN {apt_install(plan.extra['debian_packages'])}"] if plan.extra.get("debian_packages") else []),
        "COPY uv /usr/local/bin/uv",
        f"RUN python3 -m venv {venv} && {venv}/bin/python --version",
    ]
    if plan.layout == "official":
        files["activate"] = CONDA_ACTIVATE
        lines += official_env_lines(venv)
    else:
        lines.append(f"ENV VIRTUAL_ENV={venv} PATH={venv}/bin:{SYSTEM_PATH} UV_NO_CACHE=1 PIP_NO_INPUT=1")
    if plan.lock is not None:
        # a rebuild from the lock file: exactly its versions, no resolution (the date no longer matters)
        files["lock.txt"] = "".join(f"{p}\n" for p in plan.lock["packages"])
        lines.append("COPY lock.txt /root/lock.txt")
        lines.append(f"RUN uv pip install --python {venv}/bin/python --no-deps -r /root/lock.txt && rm /root/lock.txt")
        return "\n".join(lines) + "\n", files
    if r["packages"]:
        lines.append("RUN " + uv_install(" ".join(shlex.quote(p) for p in r["packages"]), d))
    if r["requirements"] is not None:
        files["requirements.txt"] = r["requirements"] + "\n"
        lines.append("COPY requirements.txt /root/requirements.txt")
        lines.append(f"RUN {uv_install('-r /root/requirements.txt', d)} && rm /root/requirements.txt")
    if r["pip_packages"]:
        lines.append("RUN " + uv_install(" ".join(shlex.quote(p) for p in r["pip_packages"]), d))
    return "\n".join(lines) + "\n", files


def scm_env(plan: BuildPlan) -> str:
    """setuptools_scm cannot read a version from a depth-1 clone: pretend the spec's version."""
    name = plan.inst["repo"].split("/")[1].upper().replace("-", "_")
    return f"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_{name}={plan.version}.0"


def inst_dockerfile(plan: BuildPlan) -> str:
    steps = [*plan.specs.get("pre_install", [])]
    if plan.specs.get("install") and plan.extra.get("legacy_editable"):
        # pip (as of the date; the venv's own is too old) as the official images did: see legacy_editable
        steps.append(f"{uv_install('--upgrade pip', plan)} && {plan.specs['install']}")
    elif plan.specs.get("install"):
        steps.append(pip_to_uv(plan.specs["install"], plan))
    lines = [f"FROM {plan.env_tag}"]
    if plan.extra.get("httpbin"):
        # A local httpbin for the test files that read HTTPBIN_URL (test.sh starts it on 127.0.0.1):
        # its own venv of the system Python, so the repo's environment is unchanged; resolved as of the
        # same date (httpbin 0.10.2). Before the per-instance LABEL, so instances share the layer.
        lines.append(
            f"RUN /usr/bin/python3 -m venv {HTTPBIN_VENV} && uv pip install --python {HTTPBIN_VENV}/bin/python"
            f" --exclude-newer {plan.exclude_newer} httpbin && {HTTPBIN_VENV}/bin/python -c 'import httpbin.core'"
        )
    lines += [
        f"LABEL {LABEL}=instance {LABEL}.instance={plan.instance_id} {LABEL}.base_commit={plan.inst['base_commit']}",
        f"ENV {scm_env(plan)}",
        f"COPY testbed {REPO_DIR}",
        f"WORKDIR {REPO_DIR}",
        f"RUN git config --global --add safe.directory {REPO_DIR} && git status --short | head -5",
    ]
    # One RUN per step, as the official setup script runs them one after the other; edits stay uncommitted.
    lines += [f"RUN {step}" for step in steps]
    if plan.extra.get("build_requires"):
        # beside what is installed, pinned as it is (-c; pip may be upgraded): nothing the tests import changes; if
        # they cannot be, the eval script's offline re-install fails as it did (its log says so), the tests run as
        # installed
        kept = "/tmp/trialbook-installed.txt"
        wanted = " ".join(shlex.quote(r) for r in plan.extra["build_requires"])
        lines.append(
            f"RUN uv pip freeze --python {plan.venv}/bin/python | grep -v -e '^-e ' -e ' @ ' -e '^pip==' > {kept}"
            f" && {{ {uv_install(f'-c {kept} {wanted}', plan)}"
            " || echo 'trialbook: build requirements not installable beside the environment'; } && rm " + kept
        )
    lines.append("RUN git status --short")
    if plan.extra.get("tox_python"):
        # tox-current-env links .tox/<env>/bin/python to the interpreter, which drops a venv's
        # site-packages (conda's python keeps its prefix): the system python adds the venv's.
        pth = "import site; site.addsitedir(%r)\\n"
        lines.append(
            f"RUN {plan.venv}/bin/python -c \"import sysconfig; open('{SYSTEM_PTH}', 'w')"
            f".write('{pth}' % sysconfig.get_paths()['purelib'])\" && cat {SYSTEM_PTH}"
        )
    if plan.layout == "official":
        lines += official_inst_tail(plan.venv)
    return "\n".join(lines) + "\n"


def content_key(dockerfile: str, files: dict[str, str]) -> str:
    h = hashlib.sha256(dockerfile.encode())
    for name in sorted(files):
        h.update(f"\0{name}\0{files[name]}".encode())
    return h.hexdigest()


def key_plan(plan: BuildPlan) -> None:
    """Set the plan's env and instance keys (the instance key covers the env key via FROM)."""
    env_df, env_files = env_dockerfile(plan)
    plan.env_key = content_key(env_df, env_files)
    plan.inst_key = content_key(inst_dockerfile(plan), {})


class Builder:
    """Builds images once each (per-tag locks), from any number of threads."""

    def __init__(self) -> None:
        try:
            self.client = docker.from_env(timeout=3600)
            self.client.ping()
        except DockerException as exc:
            raise BuildFailed(f"no Docker daemon: {exc}") from None
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()
        self.built: dict[str, float] = {}  # tag -> seconds this process spent building it

    def _lock(self, tag: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(tag, threading.Lock())

    def exists(self, tag: str) -> bool:
        try:
            self.client.images.get(tag)
            return True
        except ImageNotFound:
            return False

    def image_id(self, tag: str) -> str:
        return str(self.client.images.get(tag).id)

    def tag(self, tag: str, name: str) -> None:
        """Give the image `tag` the extra name `name` (`repo[:tag]`, a registry host allowed)."""
        repo, _, version = name.rpartition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "latest")
        try:
            self.client.images.get(tag).tag(repo, version or "latest")
        except (APIError, DockerException) as exc:
            raise BuildFailed(f"docker tag {tag} {name}: {exc}") from None

    def size_mb(self, tag: str) -> float:
        size: float = self.client.images.get(tag).attrs["Size"]
        return round(size / 1e6, 1)

    def ensure_base(self, suite: str) -> None:
        tag = base_tag(suite)
        with self._lock(tag):
            if self.exists(tag):
                return
            import time

            t0 = time.monotonic()
            with tempfile.TemporaryDirectory(prefix=f"tb-swe-{suite}-") as root:
                done = subprocess.run(
                    ["debootstrap", "--variant=minbase", f"--include={BASE_PACKAGES}", suite, root, DEBIAN_MIRROR],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if done.returncode != 0:
                    tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
                    raise BuildFailed(f"debootstrap {suite} failed: {tail[0]}")
                self.import_rootfs(Path(root), tag)
            self.built[tag] = time.monotonic() - t0

    def import_rootfs(self, root: Path, tag: str) -> None:
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for p in (root / junk).glob("*"):
                if p.is_file():
                    p.unlink()
        (root / IMAGE_CA.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(HOST_CA, root / IMAGE_CA.lstrip("/"))
        changes = [
            'CMD ["/bin/bash"]',
            f"ENV PATH={SYSTEM_PATH}",
            f"ENV SSL_CERT_FILE={IMAGE_CA}",
            f"ENV PIP_CERT={IMAGE_CA}",
            "ENV DEBIAN_FRONTEND=noninteractive",
            f"LABEL {LABEL}=base",
        ]
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        args = ["docker", "import", *[x for c in changes for x in ("-c", c)], "-", tag]
        done = subprocess.run(args, stdin=tar.stdout, capture_output=True, text=True, check=False)
        tar.wait()
        if done.returncode != 0:
            raise BuildFailed(f"docker import {tag} failed: {done.stderr.strip()[-300:]}")

    def build(self, tag: str, dockerfile: str, files: dict[str, str], fill: Any = None) -> None:
        """Build `tag` from a temporary context (Dockerfile + files; `fill(ctx)` adds more) unless present."""
        import time

        with self._lock(tag):
            if self.exists(tag):
                return
            t0 = time.monotonic()
            with tempfile.TemporaryDirectory(prefix="tb-swe-ctx-") as tmp:
                ctx = Path(tmp)
                (ctx / "Dockerfile").write_text(dockerfile)
                for name, text in files.items():
                    (ctx / name).write_text(text)
                if fill is not None:
                    fill(ctx)
                self._docker_build(ctx, tag)
            self.built[tag] = time.monotonic() - t0

    def _docker_build(self, ctx: Path, tag: str) -> None:
        log: list[str] = []
        try:
            for chunk in self.client.api.build(path=str(ctx), tag=tag, rm=True, forcerm=True, decode=True):
                if "stream" in chunk:
                    log += [ln for ln in str(chunk["stream"]).splitlines() if ln.strip()]
                if "error" in chunk:
                    tail = [ln.strip() for ln in log[-60:] if ln.strip() and not ln.startswith(" ---> ")]
                    errors = [ln for ln in tail if "error" in ln.lower() or "fail" in ln.lower()]
                    last = (errors[-4:] or tail[-6:])[-6:]
                    reason = STEP_FAILED.sub(_short_step, str(chunk["error"]).strip().splitlines()[0])
                    raise BuildFailed(ANSI.sub("", f"{reason} | {' | '.join(last)}")[:900])
        except (APIError, DockerException) as exc:
            raise BuildFailed(f"docker build {tag}: {exc}") from None

    def ensure_env(self, plan: BuildPlan) -> None:
        self.ensure_base(plan.suite)
        dockerfile, files = env_dockerfile(plan)
        uv = uv_binary()
        self.build(plan.env_tag, dockerfile, files, lambda ctx: shutil.copy2(uv, ctx / "uv"))

    def ensure_instance(self, plan: BuildPlan) -> None:
        self.ensure_env(plan)

        def checkout(ctx: Path) -> None:
            dest = ctx / "testbed"
            sha = plan.inst["base_commit"]
            steps = [
                ["init", "-q", str(dest)],
                ["-C", str(dest), "fetch", "-q", "--no-tags", "--depth", "1", str(plan.source), sha],
                ["-C", str(dest), "-c", "advice.detachedHead=false", "checkout", "-q", sha],
            ]
            for args in steps:
                done = git(args)
                if done.returncode != 0:
                    raise BuildFailed(f"git {args[2] if args[0] == '-C' else args[0]}: {done.stderr.strip()[-300:]}")

        self.build(plan.inst_tag, inst_dockerfile(plan), {}, checkout)

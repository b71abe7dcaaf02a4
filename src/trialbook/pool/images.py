"""The images of synthesized tasks: an environment per repository and commit, an image per task.

- environment `trialbook-pool-env:<hash>`: trialbook-base:bookworm with a virtualenv `/opt/venv` holding the
  repository installed editable at `/testbed` and its test dependencies, from PyPI (the host CA bundle is copied in
  and named by SSL_CERT_FILE/PIP_CERT for the build; nothing is installed at test time). It is built in two stages:
  the first installs from the original tree, the second copies only `/opt/venv` onto a fresh base, so no layer of
  the environment holds the repository's code (an editable install is a path, not a copy);
- task `trialbook-pool-task:<hash>`: the environment plus the buggy tree at `/testbed` in a git repository of one
  fresh commit (fixed author and date): neither the original code nor the repository's history is in the image.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

from trialbook.tasks.swebench.build_images import (
    HOST_CA,
    IMAGE_CA,
    SYSTEM_PATH,
    Builder,
    content_key,
    uv_binary,
)
from trialbook.tasks.swebench.generate import REPO_DIR as REPO_DIR  # re-exported: the pool's modules read it here

BASE = "trialbook-base:bookworm"
VENV = "/opt/venv"
LABEL = "trialbook.pool"
GIT_ID = "-c user.name=trialbook -c user.email=pool@trialbook.invalid"
COMMIT_DATE = "2000-01-01T00:00:00+00:00"


# `uv pip check` after installing pins: on failure one `error:` line holding every unmet requirement (a failed
# build's reason is its error lines; the script's own text is not in the build log)
CHECK_PINS = f"""uv pip check --python {VENV}/bin/python > /tmp/check.txt 2>&1 && exit 0
echo "error: pins unmet: $(tr '\\n' ' ' < /tmp/check.txt)"
exit 1
"""


def pool_env_dockerfile(pip: list[str], repo: str, commit: str, pinned: bool = False) -> str:
    """`pinned`: `pip` is a list of exact pins (a training set's recorded environment): installed as they are
    (`--no-deps`, nothing resolved), the repository on top with no dependencies of its own, and the build fails
    unless `uv pip check` finds every package's requirements met (pins that cannot work together are named)."""
    packages = " ".join(shlex.quote(p) for p in pip)
    uv = f"uv pip install -q --python {VENV}/bin/python"
    pinned_install = f"{uv} --no-deps -r /root/pins.txt && {uv} --no-deps -e {REPO_DIR} && sh /root/check.sh"
    install = pinned_install if pinned else f"{uv} -e {REPO_DIR} {packages}"
    return "\n".join(
        [
            f"FROM {BASE} AS install",
            "COPY host-ca.crt " + IMAGE_CA,
            f"ENV SSL_CERT_FILE={IMAGE_CA} PIP_CERT={IMAGE_CA} UV_NO_CACHE=1",
            "COPY uv /usr/local/bin/uv",
            f"COPY testbed {REPO_DIR}",
            *(["COPY pins.txt check.sh /root/"] if pinned else []),
            f"RUN uv venv -q {VENV} --python /usr/bin/python3 && {install}",
            f"FROM {BASE}",
            f"COPY --from=install {VENV} {VENV}",
            f"LABEL {LABEL}=env {LABEL}.repo={repo} {LABEL}.commit={commit}",
            f"ENV VIRTUAL_ENV={VENV} PATH={VENV}/bin:{SYSTEM_PATH} PYTHONDONTWRITEBYTECODE=1",
            f"WORKDIR {REPO_DIR}",
            "",
        ]
    )


def task_dockerfile(env_tag: str, task_id: str) -> str:
    return "\n".join(
        [
            f"FROM {env_tag}",
            f"LABEL {LABEL}=task {LABEL}.task={task_id}",
            f"COPY testbed {REPO_DIR}",
            f"RUN cd {REPO_DIR} && git init -q -b main && git add -A"
            f" && GIT_AUTHOR_DATE={COMMIT_DATE} GIT_COMMITTER_DATE={COMMIT_DATE}"
            f" git {GIT_ID} commit -qm 'initial import' && git config --global --add safe.directory {REPO_DIR}",
            "",
        ]
    )


def tree_files(root: Path) -> dict[str, bytes]:
    """The tracked files of a checkout (what `git ls-files` lists), by relative path."""
    done = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True)
    out = {}
    for rel in done.stdout.decode().split("\0"):
        if rel and (root / rel).is_file() and not (root / rel).is_symlink():
            out[rel] = (root / rel).read_bytes()
    return out


def _copy_tree(files: dict[str, bytes], dest: Path) -> None:
    for rel, data in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def _key(dockerfile: str, files: dict[str, bytes]) -> str:
    return content_key(dockerfile, {k: v.decode(errors="replace") for k, v in files.items()})[:16]


def ensure_env(
    builder: Builder, files: dict[str, bytes], pip: list[str], repo: str, commit: str, pinned: bool = False
) -> str:
    dockerfile = pool_env_dockerfile(pip, repo, commit, pinned)
    pins = "".join(f"{p}\n" for p in pip) if pinned else ""
    tag = f"trialbook-pool-env:{_key(dockerfile + pins, files)}"

    def fill(ctx: Path) -> None:
        if pinned:
            (ctx / "pins.txt").write_text(pins)
            (ctx / "check.sh").write_text(CHECK_PINS)
        shutil.copy2(uv_binary(), ctx / "uv")
        shutil.copyfile(HOST_CA, ctx / "host-ca.crt")
        _copy_tree(files, ctx / "testbed")

    builder.build(tag, dockerfile, {}, fill)
    return tag


def ensure_task(builder: Builder, env_tag: str, task_id: str, files: dict[str, bytes]) -> str:
    dockerfile = task_dockerfile(env_tag, task_id)
    tag = f"trialbook-pool-task:{_key(dockerfile, files)}"
    builder.build(tag, dockerfile, {}, lambda ctx: _copy_tree(files, ctx / "testbed"))
    return tag


SCAN = r"""
set -u
cd {repo}
commits=$(git rev-list --all | wc -l)
blob=$(git cat-file -e {blob} 2>/dev/null && echo present || echo absent)
same=$(find / -xdev -type f -size {size}c 2>/dev/null | xargs -r sha256sum 2>/dev/null | grep -c {sha} || true)
echo "commits=$commits blob=$blob copies=$same"
"""


def leak_scan(image: str, original: bytes) -> str:
    """ "clean" when the image's repository has one commit, its object store lacks the original file's blob, and no
    file in the image has the original file's content; else what was found."""
    import hashlib

    blob = hashlib.sha1(b"blob %d\0" % len(original) + original).hexdigest()
    sha = hashlib.sha256(original).hexdigest()
    script = SCAN.format(repo=REPO_DIR, blob=blob, size=len(original), sha=sha)
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", image, "bash", "-c", script],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    line = (done.stdout.strip().splitlines() or [done.stderr.strip()[-200:]])[-1]
    return "clean" if line == "commits=1 blob=absent copies=0" else line

"""Lock files of built instances: the environment as it was resolved, to rebuild it exactly later.

`<task>/environment/swebench.lock.json` holds the interpreter version, the base image (tag and id: a
debootstrap made elsewhere or later is another base), the date the packages were resolved as of, and
every package of the repo's environment as `uv pip freeze` lists it in the finished instance image
(`name==version`; the repository itself, installed from /testbed, is listed apart under `local`).
`--build --from-lock DIR` installs exactly those versions (`uv pip install --no-deps`, no resolution)
before the instance's own steps, then locks the result again: the same lock, or a list of what changed
(`lock_changes`), in which case the rebuilt image is a variant of the locked one, for
`validate --image-variant locked=<image> --image-variant rebuilt=<image>` to compare test by test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from docker.errors import APIError, ContainerError, DockerException, ImageNotFound

from trialbook.errors import UserError

LOCK_FILE = "environment/swebench.lock.json"
LOCK_VERSION = 1
# What makes two locks the same environment (the rest is provenance).
IDENTITY = ("python", "suite", "layout", "base_image_id", "packages", "local")


class LockError(Exception):
    """An image's environment could not be read; the message is one line."""


def _freeze_script(venv: str) -> str:
    return (
        f"{venv}/bin/python -c 'import platform; print(platform.python_version())'"
        f" && uv pip freeze --python {venv}/bin/python"
    )


def read_environment(client: Any, image: str, venv: str) -> tuple[str, list[str], list[str]]:
    """(python version, pinned packages, local installs) of `image`'s environment at `venv`."""
    try:
        out = client.containers.run(image, ["bash", "-c", _freeze_script(venv)], remove=True, network_disabled=True)
    except (ContainerError, ImageNotFound, APIError, DockerException) as exc:
        raise LockError(f"cannot read the environment of {image}: {str(exc).strip().splitlines()[-1]}") from None
    lines = [ln.strip() for ln in out.decode(errors="replace").splitlines() if ln.strip()]
    if not lines:
        raise LockError(f"cannot read the environment of {image}: no output")
    python, rest = lines[0], lines[1:]
    local = sorted(ln for ln in rest if ln.startswith("-e ") or " @ " in ln)
    packages = sorted((ln for ln in rest if ln not in local), key=str.lower)
    return python, packages, local


def make_lock(
    instance_id: str,
    suite: str,
    layout: str,
    base: tuple[str, str],
    exclude_newer: str,
    env: tuple[str, list[str], list[str]],
) -> dict[str, Any]:
    """`base`: (tag, image id) of the base image; `env`: `read_environment`'s answer."""
    base_tag, base_id = base
    python, packages, local = env
    return {
        "lock_version": LOCK_VERSION,
        "instance_id": instance_id,
        "python": python,
        "suite": suite,
        "layout": layout,
        "base_image": base_tag,
        "base_image_id": base_id,
        "resolved_as_of": exclude_newer,
        "packages": packages,
        "local": local,
    }


def lock_text(lock: dict[str, Any]) -> str:
    return json.dumps(lock, indent=1) + "\n"


def changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """What differs between two locks, one short line each (empty: the same environment)."""
    out = []
    for key in IDENTITY:
        if key in ("packages", "local"):
            continue
        if old.get(key) != new.get(key):
            out.append(f"{key}: {old.get(key)} -> {new.get(key)}")
    for key in ("packages", "local"):
        before, after = set(old.get(key) or []), set(new.get(key) or [])
        out += [f"- {p}" for p in sorted(before - after)] + [f"+ {p}" for p in sorted(after - before)]
    return out


def read_lock(folder: Path, instance_id: str) -> dict[str, Any]:
    """The lock of `instance_id` under the tasks folder `folder`; bad or missing: one line (exit 2)."""
    path = folder / instance_id / LOCK_FILE
    try:
        lock = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"--from-lock {folder}: no lock file {path} for {instance_id}") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"--from-lock: {path} is not a lock file: {exc}") from None
    if not isinstance(lock, dict) or lock.get("lock_version") != LOCK_VERSION:
        raise UserError(f"--from-lock: {path} is not a version-{LOCK_VERSION} lock file")
    bad = [p for p in lock.get("packages", []) if not isinstance(p, str) or "==" not in p]
    if not isinstance(lock.get("packages"), list) or bad:
        raise UserError(f"--from-lock: {path}: packages must be a list of name==version ({bad[:1]})")
    if lock.get("instance_id") != instance_id:
        raise UserError(f"--from-lock: {path} is the lock of {lock.get('instance_id')!r}, not {instance_id}")
    return lock

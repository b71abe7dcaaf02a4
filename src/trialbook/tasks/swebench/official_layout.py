"""The published sweb.eval image layout, built here without conda (`--build --image official`).

The official images keep the repo's Python in a conda environment `/opt/miniconda3/envs/testbed`, the
repository in `/testbed`, `/opt/miniconda3/bin` on PATH (not the environment: every shell activates it),
and their eval script starts with `source /opt/miniconda3/bin/activate` then `conda activate testbed`.
Here the environment is a virtualenv at that path and `/opt/miniconda3/bin/activate` is a stand-in for
conda's: sourcing it defines a `conda` shell function that knows `activate ENV` and `deactivate` (PATH,
CONDA_PREFIX, CONDA_DEFAULT_ENV, CONDA_SHLVL as conda sets them) and activates `base` as conda's does.
Anything else (`conda install`, `conda list`) says it is not conda and fails, so a task that needs real conda
is not silently graded on something else. `/opt/miniconda3/bin/python` is the system Python (conda's base
has one; test.sh grades with it).
"""

from __future__ import annotations

from trialbook.tasks.swebench.build_plan import CONDA_ROOT

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

CONDA_ACTIVATE = f"""\
# trialbook's stand-in for conda's bin/activate (no conda in this image): `source` it, then
# `conda activate ENV` puts {CONDA_ROOT}/envs/ENV/bin first on PATH as conda does.
_TB_CONDA_ROOT={CONDA_ROOT}
conda() {{
  local cmd="${{1:-}}"
  case "$cmd" in
    activate)
      local name="${{2:-base}}" prefix
      if [ "$name" = base ]; then prefix="$_TB_CONDA_ROOT"; else prefix="$_TB_CONDA_ROOT/envs/$name"; fi
      case "$name" in /*) prefix="$name" ;; esac
      if [ ! -x "$prefix/bin/python" ]; then
        echo "EnvironmentNameNotFound: Could not find conda environment: $name" >&2
        return 1
      fi
      conda deactivate
      PATH="$prefix/bin:$PATH"
      export PATH CONDA_PREFIX="$prefix" CONDA_DEFAULT_ENV="$name" CONDA_SHLVL=1
      [ "$prefix" = "$_TB_CONDA_ROOT" ] || export VIRTUAL_ENV="$prefix"
      hash -r
      ;;
    deactivate)
      if [ -n "${{CONDA_PREFIX:-}}" ]; then
        PATH=":$PATH:"
        PATH="${{PATH//:$CONDA_PREFIX\\/bin:/:}}"
        PATH="${{PATH#:}}"
        PATH="${{PATH%:}}"
        export PATH
      fi
      unset CONDA_PREFIX CONDA_DEFAULT_ENV VIRTUAL_ENV
      export CONDA_SHLVL=0
      hash -r
      ;;
    *)
      echo "conda $cmd: not available (this image has trialbook's conda stand-in, not conda)" >&2
      return 1
      ;;
  esac
}}
conda activate "${{1:-base}}"
"""


def official_env_lines(venv: str) -> list[str]:
    """Environment-image lines after the virtualenv at `venv` exists: the conda stand-in, the base's python,
    and the environment on PATH for the build steps that follow (the instance image takes it off again)."""
    return [
        f"COPY activate {CONDA_ROOT}/bin/activate",
        f"RUN mkdir -p {CONDA_ROOT}/condabin && ln -s /usr/bin/python3 {CONDA_ROOT}/bin/python"
        f" && ln -s /usr/bin/python3 {CONDA_ROOT}/bin/python3",
        f"ENV PATH={venv}/bin:{CONDA_ROOT}/bin:{SYSTEM_PATH} UV_NO_CACHE=1 PIP_NO_INPUT=1",
    ]


def official_inst_tail(venv: str) -> list[str]:
    """Last instance-image lines: PATH and .bashrc as the published images have them."""
    name = venv.rsplit("/", 1)[-1]
    return [
        f"RUN echo 'source {CONDA_ROOT}/bin/activate && conda activate {name}' > /root/.bashrc",
        f"ENV PATH={CONDA_ROOT}/bin:{SYSTEM_PATH}",
    ]

#!/usr/bin/env bash
# Make a Docker Engine and the trialbook base image available (idempotent).
# Installs docker.io + debootstrap (+ crun when the distribution has it) if missing, starts dockerd in the
# background if no daemon answers (with crun registered as a runtime: trialbook's containers use it, see
# AUTO_RUNTIME in src/trialbook/sandbox/docker.py), then builds trialbook-base:bookworm from debootstrap
# (no registry needed).
set -euo pipefail
IMAGE="${TRIALBOOK_BASE_IMAGE:-trialbook-base:bookworm}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  echo "docker-up: installing ${need[*]}"
  $SUDO apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! command -v crun >/dev/null 2>&1; then  # optional: without it the containers run on the daemon's default (runc)
  echo "docker-up: installing crun"
  { DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq crun || { $SUDO apt-get update -qq \
      && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq crun; }; } >/dev/null 2>&1 \
    || echo "docker-up: no crun package here; containers will use the daemon's default runtime"
fi

# crun refuses a host whose cgroups are in hybrid mode (v1 hierarchies plus a v2 one) while a controller is left on
# the v2 side, as some VMs boot (hugetlb here): such a controller gets its own v1 hierarchy, as the others have.
# Only when this script starts the daemon; if a mount fails, trialbook falls back to the default runtime.
cgroup_hybrid_fix() {
  local v2=/sys/fs/cgroup/unified c stray=()
  [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = tmpfs ] && [ -r "$v2/cgroup.controllers" ] || return 0
  read -r -a stray < "$v2/cgroup.controllers" || true
  for c in "${stray[@]}"; do
    [ -e "/sys/fs/cgroup/$c" ] && continue
    echo "docker-up: cgroup controller $c mounted as a v1 hierarchy (/sys/fs/cgroup/$c) for crun"
    { $SUDO mkdir "/sys/fs/cgroup/$c" && $SUDO mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"; } || true
  done
}

# crun, like runc, copies its own binary into a sealed memfd and re-executes that on every call (4 of the 8 runtime
# execs of a container's lifecycle here), so that no container can overwrite the host's runtime through
# /proc/PID/exe (CVE-2019-5736). A read-only mount of the binary protects it as well, and crun then skips the copy
# when _LIBCONTAINER_CLONED_BINARY is set (the check runc's cloned_binary.c has, which crun shares): ~0.01 CPU s less
# a container (README, Speed). runc, run from its writable path, still copies itself. Prints the path to register:
# that mount, or crun itself when it cannot be made (no mount rights).
CRUN_RO=/run/trialbook/crun
readonly_crun() {
  local crun
  crun="$(command -v crun)"
  if ! findmnt -n "$CRUN_RO" >/dev/null 2>&1; then
    { $SUDO mkdir -p "${CRUN_RO%/*}" && $SUDO touch "$CRUN_RO" && $SUDO mount --bind "$crun" "$CRUN_RO" \
        && $SUDO mount -o remount,bind,ro "$CRUN_RO"; } >/dev/null 2>&1 || $SUDO umount "$CRUN_RO" >/dev/null 2>&1 || true
  fi
  if findmnt -n -o OPTIONS "$CRUN_RO" 2>/dev/null | grep -q '^ro,'; then echo "$CRUN_RO"; else echo "$crun"; fi
}

runtime_flags=()  # crun as a runtime of the daemon this script starts, unless its daemon.json names one already
daemon_env=()  # the daemon's extra environment (it passes it on to the runtimes)

start_dockerd() {  # args: extra dockerd flags; returns 0 once the daemon answers
  echo "docker-up: starting dockerd $* (log: /tmp/dockerd.log)"
  $SUDO env "${daemon_env[@]}" nohup dockerd "$@" >/tmp/dockerd.log 2>&1 &
  echo $! >/tmp/dockerd.pid
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$(cat /tmp/dockerd.pid)" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

if ! docker info >/dev/null 2>&1; then
  if command -v crun >/dev/null 2>&1; then
    cgroup_hybrid_fix
    if ! grep -qs '"crun"' /etc/docker/daemon.json; then
      crun_path="$(readonly_crun)"
      runtime_flags=(--add-runtime "crun=$crun_path")
      [ "$crun_path" = "$CRUN_RO" ] && daemon_env=(_LIBCONTAINER_CLONED_BINARY=1)
    fi
  fi
  if ! start_dockerd "${runtime_flags[@]}"; then
    # Nested/unprivileged hosts: overlayfs or iptables may be unavailable; vfs and no iptables always work.
    $SUDO kill "$(cat /tmp/dockerd.pid)" 2>/dev/null || true
    sleep 2
    start_dockerd --storage-driver=vfs --iptables=false "${runtime_flags[@]}" \
      || { echo "docker-up: dockerd did not start; see /tmp/dockerd.log" >&2; exit 1; }
  fi
fi

if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  dir="$(mktemp -d /tmp/tb-rootfs.XXXXXX)"
  echo "docker-up: building $IMAGE with debootstrap (a few minutes)"
  mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  $SUDO debootstrap --variant=minbase --include=python3,python3-pytest,git,patch bookworm "$dir" "$mirror" >/tmp/debootstrap.log 2>&1 \
    || { echo "docker-up: debootstrap failed; see /tmp/debootstrap.log" >&2; exit 1; }
  $SUDO rm -rf "$dir/var/cache/apt/archives/"*.deb "$dir/var/lib/apt/lists/"*
  $SUDO tar -C "$dir" -c . | docker import -c 'CMD ["/bin/bash"]' -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$IMAGE" >/dev/null
  $SUDO rm -rf "$dir"
fi
runtimes="$(docker info --format '{{range $name, $_ := .Runtimes}}{{$name}} {{end}}' 2>/dev/null || true)"
echo "docker-up: ready ($(docker version --format '{{.Server.Version}}'), image $IMAGE, runtimes: ${runtimes% })"

#!/usr/bin/env bash
# Make a Docker Engine and the trialbook base image available (idempotent).
# Installs docker.io + debootstrap if missing, starts dockerd in the background if no daemon
# answers, then builds trialbook-base:bookworm from debootstrap (no registry needed).
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

start_dockerd() {  # args: extra dockerd flags; returns 0 once the daemon answers
  echo "docker-up: starting dockerd $* (log: /tmp/dockerd.log)"
  $SUDO nohup dockerd "$@" >/tmp/dockerd.log 2>&1 &
  echo $! >/tmp/dockerd.pid
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && return 0
    kill -0 "$(cat /tmp/dockerd.pid)" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

if ! docker info >/dev/null 2>&1; then
  if ! start_dockerd; then
    # Nested/unprivileged hosts: overlayfs or iptables may be unavailable; vfs and no iptables always work.
    $SUDO kill "$(cat /tmp/dockerd.pid)" 2>/dev/null || true
    sleep 2
    start_dockerd --storage-driver=vfs --iptables=false \
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
echo "docker-up: ready ($(docker version --format '{{.Server.Version}}'), image $IMAGE)"

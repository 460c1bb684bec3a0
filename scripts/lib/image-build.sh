# Sourced by scripts/image-check.sh and scripts/pod-check.sh: builds the Dockerfile for real with
# buildah into a storage of the caller's own.
#
# No registry image can be pulled here, so the Dockerfile's two bases are stand-ins of the same
# shapes (scripts/lib/stand-in-bases.sh). The debootstrap and the downloads they are made from are
# kept in ${XDG_CACHE_HOME:-$HOME/.cache}/ticket-auth-proxy-ci/image, where CI keeps its Nodes.
#
# The caller sets `say` and `fail` (a message, then exit 1) and calls, in order:
#   image_build_init WORK   root and tools checked; buildah's storage in WORK (bah=(buildah ...))
#   image_build_standin     the stand-ins for both bases in that storage
#   image_build_dockerfile  the Dockerfile built on it: localhost/ticket-auth-proxy:check
#   image_build_podman      podman over the same storage (pod=(podman ...)), to run what was built
# and image_build_cleanup at exit.

image_cache="${XDG_CACHE_HOME:-$HOME/.cache}/ticket-auth-proxy-ci/image"

# Needs root (buildah's chroot isolation, debootstrap), the npm registry (npm ci in the build
# stages) and Debian's packages (the stand-in, and apt-get in the Dockerfile).
image_build_init() {
  image_work=$1
  [ "$(id -u)" = 0 ] || fail "needs root (buildah's chroot isolation and a mount namespace)"
  node_major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$node_major" -ge 22 ] || fail "node $(node --version) is older than 22: put a Node 22+ first on PATH"
  if ! command -v buildah >/dev/null; then
    say "installing Debian's buildah"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah >/dev/null
  fi
  chmod 755 "$image_work"
  pod=()
  bah=(buildah --root "$image_work/storage" --runroot "$image_work/run" --storage-driver vfs)
}

image_build_cleanup() {
  # The pods and containers first: they hold the image's layers.
  if [ ${#pod[@]} -gt 0 ]; then
    "${pod[@]}" pod rm --all --force >/dev/null 2>&1 || true
    "${pod[@]}" rm --all --force >/dev/null 2>&1 || true
  fi
  "${bah[@]}" rm --all >/dev/null 2>&1 || true
  # vfs layers are plain directories; some are read-only copies of read-only trees.
  chmod -R u+w "$image_work" 2>/dev/null || true
  rm -rf "$image_work"
}

# Stand-ins for the Dockerfile's two bases, of the same shapes (scripts/lib/stand-in-bases.sh):
# the build base with Node and npm, the runtime base with Node alone, no shell and no npm.
. "$(dirname "${BASH_SOURCE[0]}")/stand-in-bases.sh"
image_build_standin() {
  local work=$image_work stand_in_cache=$image_cache
  mkdir -p "$image_cache"
  stand_in_bases "$(dpkg --print-architecture)"
}

# The real Dockerfile, built as written, on the stand-ins.
image_build_dockerfile() {
  say "building the Dockerfile (npm ci from the registry in the build stages)"
  "${bah[@]}" build --isolation chroot --pull=never --quiet \
    --build-arg NODE_IMAGE="$stand_in_node_image" \
    --build-arg RUNTIME_IMAGE="$stand_in_runtime_image-$(dpkg --print-architecture)" \
    -t localhost/ticket-auth-proxy:check -f Dockerfile . >/dev/null
}

# Debian's podman over the storage buildah built into. podman 4.3 runs containers on these machines
# only with runc and explicit ulimits (crun and the default ulimits fail on setrlimit): a
# containers.conf of the caller's own, podman's state in the work folder.
image_build_podman() {
  local tool missing=()
  for tool in podman runc catatonit nsenter; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian's podman, runc and catatonit (missing: ${missing[*]})"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc catatonit util-linux >/dev/null ||
      fail "apt-get install podman runc catatonit"
  fi
  mkdir -p "$image_work/tmp"
  cat >"$image_work/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$image_work/events.log"
tmp_dir = "$image_work/tmp"
CONF
  export CONTAINERS_CONF="$image_work/containers.conf"
  pod=(podman --root "$image_work/storage" --runroot "$image_work/run" --storage-driver vfs)
}

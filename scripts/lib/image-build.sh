# Sourced by scripts/image-check.sh and scripts/pod-check.sh: builds the Dockerfile for real with
# buildah into a storage of the caller's own.
#
# No registry image can be pulled here, so the Dockerfile's base (NODE_IMAGE) is a stand-in:
# Debian's minimal root (debootstrap, from the mirror this machine uses) with this machine's own
# Node (>= 22) and npm in /usr/local, as node:24-slim is built. The debootstrap and the stand-in
# image are kept in ${XDG_CACHE_HOME:-$HOME/.cache}/ticket-auth-proxy-ci/image, where CI keeps its
# Nodes, and made again when missing (the stand-in also when the Node it holds changes).
#
# The caller sets `say` and `fail` (a message, then exit 1) and calls, in order:
#   image_build_init WORK   root and tools checked; buildah's storage in WORK (bah=(buildah ...))
#   image_build_standin     localhost/node-standin:$node_major in that storage
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

# A stand-in for node:24-slim from this machine's Node: node:24-slim is Debian's minimal root with
# Node in /usr/local, and so is the stand-in, a debootstrap of this machine's Debian release from
# its own mirror with this machine's node and npm copied in. apt-get works in it as in the real base.
image_build_standin() {
  local suite mirror base_tar node_bin npm_dir rootfs standin_tar base lib
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  node_bin=$(readlink -f "$(command -v node)")
  standin_tar="$image_cache/node-standin-$(node --version)-$suite.oci.tar"
  mkdir -p "$image_cache"
  if [ -f "$standin_tar" ]; then
    say "the stand-in base from $standin_tar"
    "${bah[@]}" tag "$("${bah[@]}" pull --quiet "oci-archive:$standin_tar")" localhost/node-standin:"$node_major"
    return
  fi
  mirror=$(grep -hoE '^URIs: *https?://[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | sed 's/^URIs: *//')
  mirror=${mirror:-$(grep -hoE '^deb +https?://[^ ]+' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 | sed 's/^deb *//')}
  [ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list(.d) for the stand-in's debootstrap"
  rootfs="$image_work/rootfs"
  mkdir -p "$rootfs"
  base_tar="$image_cache/debian-$suite-minbase.tar"
  if [ ! -f "$base_tar" ]; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    say "debootstrap of Debian $suite (minbase) from $mirror, once (kept in $base_tar)"
    debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$image_work/debootstrap.log" 2>&1 ||
      { tail -20 "$image_work/debootstrap.log"; fail "debootstrap"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -cf "$base_tar.partial" . && mv "$base_tar.partial" "$base_tar"
  else
    tar -C "$rootfs" -xf "$base_tar"
  fi
  # The stand-in reaches the packages the way this machine does (its sources and apt settings).
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    rm -f "$rootfs/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/"
  fi
  cp /etc/apt/apt.conf.d/99* "$rootfs/etc/apt/apt.conf.d/" 2>/dev/null || true
  say "adding $(command -v node) ($(node --version)) and npm to the stand-in"
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  mkdir -p "$rootfs"/{usr/local/bin,usr/local/lib/node_modules,run/secrets}
  cp "$node_bin" "$rootfs/usr/local/bin/node"
  cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
    cp --parents -L -n "$lib" "$rootfs/"
  done
  local base_env=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  # A machine that reaches the registry through a TLS-inspecting proxy trusts its CA through
  # NODE_EXTRA_CA_CERTS: the stand-in trusts it the same way, or npm ci cannot fetch.
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    mkdir -p "$rootfs/etc/ssl/certs"
    cp "$NODE_EXTRA_CA_CERTS" "$rootfs/etc/ssl/certs/extra-ca.pem"
    base_env+=(--env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/extra-ca.pem)
  fi
  base=$("${bah[@]}" from scratch)
  "${bah[@]}" copy "$base" "$rootfs/" / >/dev/null
  "${bah[@]}" config "${base_env[@]}" --cmd node "$base"
  "${bah[@]}" commit --quiet "$base" localhost/node-standin:"$node_major" >/dev/null
  "${bah[@]}" rm "$base" >/dev/null
  rm -rf "$rootfs"
  "${bah[@]}" push --quiet localhost/node-standin:"$node_major" "oci-archive:$standin_tar.partial" >/dev/null &&
    mv "$standin_tar.partial" "$standin_tar"
  # One stand-in is kept: the one of the Node on PATH now.
  find "$image_cache" -maxdepth 1 -name 'node-standin-*.oci.tar' ! -path "$standin_tar" -delete
}

# The real Dockerfile, built as written, on the stand-in.
image_build_dockerfile() {
  say "building the Dockerfile (npm ci from the registry in the build stages)"
  "${bah[@]}" build --isolation chroot --pull=never --quiet \
    --build-arg NODE_IMAGE=localhost/node-standin:"$node_major" \
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

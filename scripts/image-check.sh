#!/usr/bin/env bash
# npm run image:check: builds the Dockerfile for real with buildah and runs the built image's
# command, as the image's user, on a read-only root filesystem, against the mock Ticket Service.
#
# No registry image can be pulled here, so the Dockerfile's base (NODE_IMAGE) is a stand-in:
# Debian's minimal root (debootstrap, from the mirror this machine uses) with this machine's own
# Node (>= 22) and npm in /usr/local, as node:24-slim is built. It prints what it proved at the end.
#
# Needs root (buildah, debootstrap, mount namespaces), the npm registry (npm ci in the build
# stages) and Debian's packages (the stand-in, and apt-get in the Dockerfile).
# Everything it stores lives in a temporary folder removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'image-check: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (buildah's chroot isolation and a mount namespace)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || fail "node $(node --version) is older than 22: put a Node 22+ first on PATH"
if ! command -v buildah >/dev/null; then
  say "installing Debian's buildah"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah >/dev/null
fi

work=$(mktemp -d /tmp/image-check.XXXXXX)
chmod 755 "$work"
bah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  "${bah[@]}" rm --all >/dev/null 2>&1 || true
  # vfs layers are plain directories; some are read-only copies of read-only trees.
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)

# --- 1. A stand-in for node:24-slim from this machine's Node ------------------------------------
# node:24-slim is Debian's minimal root with Node in /usr/local: so is the stand-in, a debootstrap
# of this machine's Debian release from its own mirror (kept in .cache/image-check for the next
# run), with this machine's node and npm copied in. apt-get works in it as in the real base.
rootfs="$work/rootfs"
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
mirror=$(grep -hoE '^URIs: *https?://[^ ]+' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1 | sed 's/^URIs: *//')
mirror=${mirror:-$(grep -hoE '^deb +https?://[^ ]+' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 | sed 's/^deb *//')}
[ -n "$mirror" ] || fail "no Debian mirror found in /etc/apt/sources.list(.d) for the stand-in's debootstrap"
cached="$PWD/.cache/image-check/debian-$suite-minbase.tar"
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
say "adding $(command -v node) ($(node --version)) and npm to the stand-in"
node_bin=$(readlink -f "$(command -v node)")
npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
mkdir -p "$rootfs"/{usr/local/bin,usr/local/lib/node_modules,run/secrets}
cp "$node_bin" "$rootfs/usr/local/bin/node"
cp -a "$npm_dir" "$rootfs/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
  cp --parents -L -n "$lib" "$rootfs/"
done
base_env=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
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

# --- 2. The real Dockerfile, built as written ---------------------------------------------------
say "building the Dockerfile (npm ci from the registry in the build stages)"
"${bah[@]}" build --isolation chroot --pull=never --quiet \
  --build-arg NODE_IMAGE=localhost/node-standin:"$node_major" \
  -t localhost/ticket-auth-proxy:check -f Dockerfile . >/dev/null
config=$("${bah[@]}" inspect --type image localhost/ticket-auth-proxy:check | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>console.log(JSON.stringify(JSON.parse(s).OCIv1.config)))')
user=$(node -e 'console.log(JSON.parse(process.argv[1]).User)' "$config")
workdir=$(node -e 'console.log(JSON.parse(process.argv[1]).WorkingDir)' "$config")
mapfile -t cmd < <(node -e 'for (const a of JSON.parse(process.argv[1]).Cmd) console.log(a)' "$config")
mapfile -t image_env < <(node -e 'for (const e of JSON.parse(process.argv[1]).Env ?? []) console.log(e)' "$config")
say "built: user $user, workdir $workdir, cmd ${cmd[*]}, env ${image_env[*]}"
ctr=$("${bah[@]}" from localhost/ticket-auth-proxy:check)
mnt=$("${bah[@]}" mount "$ctr")
[ -d "$mnt/app/node_modules/undici" ] || fail "the image has no production dependencies"
[ ! -d "$mnt/app/node_modules/vitest" ] || fail "the image carries dev dependencies (vitest)"
[ ! -d "$mnt/app/src" ] || fail "the image carries the TypeScript sources"

# --- 3. The image's command, as its user, on a read-only root -----------------------------------
npm run build --silent
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
node --input-type=module -e "
  const { createMockTicketService } = await import('./dist/mock/ticket-service.js');
  await createMockTicketService({ clients: { 'image-check': 'image-check-secret' }, tokenTtlS: 600, port: $port });
" &
pids+=($!)
printf 'image-check-secret\n' >"$work/client-secret"
mkdir -p "$mnt/run/secrets" "$mnt/proc"
touch "$mnt/run/secrets/client-secret"
proxy_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
admin_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
# The image's LD_PRELOAD is for the image's node, not for this machine's unshare and chroot: it is
# set by /usr/bin/env inside the image's root.
host_env=() preload=
for e in "${image_env[@]}"; do
  case "$e" in LD_PRELOAD=*) preload=$e ;; *) host_env+=("$e") ;; esac
done
say "starting the image's command (read-only root, user $user)"
env -i "${host_env[@]}" \
  BASE_URL="http://127.0.0.1:$port" CLIENT_ID=image-check CLIENT_SECRET_FILE=/run/secrets/client-secret \
  LISTEN_PORT="$proxy_port" ADMIN_PORT="$admin_port" ADMIN_HOST=127.0.0.1 \
  unshare --mount --pid --fork --propagation private /bin/sh -c '
    set -e
    chroot=$1; mnt=$2; secret=$3; user=$4; workdir=$5; preload=$6; shift 6
    mount --bind "$mnt" "$mnt"
    mount --bind "$secret" "$mnt/run/secrets/client-secret"
    mount -t proc proc "$mnt/proc"
    mount -o remount,bind,ro "$mnt"
    exec "$chroot" --userspec="$user" "$mnt" /usr/bin/env ${preload:+"$preload"} /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$workdir" "$@"
  ' sh "$(command -v chroot)" "$mnt" "$work/client-secret" "$user" "$workdir" "$preload" "${cmd[@]}" >"$work/proxy.log" 2>&1 &
proxy_pid=$!
pids+=("$proxy_pid")

deadline=$(($(date +%s) + 30))
until [ "$(node -e "fetch('http://127.0.0.1:$admin_port/readyz').then(r=>console.log(r.status),()=>console.log(0))")" = 200 ]; do
  kill -0 "$proxy_pid" 2>/dev/null || { cat "$work/proxy.log"; fail "the image's command exited"; }
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$work/proxy.log"; fail "/readyz did not answer 200 within 30 s"; }
  sleep 0.2
done
livez=$(node -e "fetch('http://127.0.0.1:$admin_port/livez').then(r=>console.log(r.status),()=>console.log(0))")
[ "$livez" = 200 ] || fail "/livez answered $livez"
tickets=$(node -e "fetch('http://127.0.0.1:$proxy_port/api/v1/tickets').then(async r=>console.log(r.status, (await r.text()).length),()=>console.log(0))")
case "$tickets" in 200\ *) ;; *) cat "$work/proxy.log"; fail "GET /api/v1/tickets through the proxy answered $tickets" ;; esac
# node is PID 1 of its own PID namespace, as in a container: it must handle SIGTERM itself.
node_pid=$(pgrep -P "$proxy_pid" | head -1)
argv0=$(tr '\0' '\n' <"/proc/$node_pid/cmdline" | head -1)
[ "$argv0" = node ] || fail "PID 1 of the namespace is $argv0, not node"
if [ -n "$preload" ]; then
  grep -q "${preload#LD_PRELOAD=}" "/proc/$node_pid/maps" || fail "node runs without ${preload#LD_PRELOAD=} ($preload is set)"
  allocator="node runs with ${preload#LD_PRELOAD=} preloaded; "
fi
kill -TERM "$node_pid"
code=0
wait "$proxy_pid" || code=$?
grep -q EROFS "$work/proxy.log" && { cat "$work/proxy.log"; fail "the proxy tried to write to the read-only root"; }
[ "$code" = 0 ] || { cat "$work/proxy.log"; fail "exit status $code after SIGTERM"; }

say "OK in $(($(date +%s) - started)) s:"
say "  the Dockerfile builds as written (multi-stage, npm ci from the lockfile, tsc) on a stand-in base;"
say "  the image holds production dependencies only;"
say "  its CMD ran as $user on a read-only root: /livez 200, /readyz 200 (a token fetched from the"
say "  mock), GET /api/v1/tickets 200 through it; ${allocator:-}SIGTERM to node as PID 1 of its namespace: exit 0."

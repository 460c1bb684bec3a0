#!/usr/bin/env bash
# npm run image:check: builds the Dockerfile for real with buildah and runs the built image's
# command, as the image's user, on a read-only root filesystem, against the mock Ticket Service.
#
# No registry image can be pulled here, so the Dockerfile's bases (NODE_IMAGE, RUNTIME_IMAGE) are
# stand-ins of the same shapes, made from this machine's own Node (>= 22) by
# scripts/lib/stand-in-bases.sh. It prints what it proved at the end.
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

# --- 1. Stand-ins for the Dockerfile's two bases (scripts/lib/stand-in-bases.sh) --------------
. scripts/lib/stand-in-bases.sh
stand_in_bases "$(dpkg --print-architecture)"

# --- 2. The real Dockerfile, built as written ---------------------------------------------------
say "building the Dockerfile (npm ci from the registry in the build stages)"
"${bah[@]}" build --isolation chroot --pull=never --quiet \
  --build-arg NODE_IMAGE="$stand_in_node_image" --build-arg RUNTIME_IMAGE="$stand_in_runtime_image-$(dpkg --print-architecture)" \
  -t localhost/ticket-auth-proxy:check -f Dockerfile . >/dev/null
config=$("${bah[@]}" inspect --type image localhost/ticket-auth-proxy:check | node -e 'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>console.log(JSON.stringify(JSON.parse(s).OCIv1.config)))')
user=$(node -e 'console.log(JSON.parse(process.argv[1]).User)' "$config")
workdir=$(node -e 'console.log(JSON.parse(process.argv[1]).WorkingDir)' "$config")
mapfile -t cmd < <(node -e 'const c = JSON.parse(process.argv[1]); for (const a of [...(c.Entrypoint ?? []), ...(c.Cmd ?? [])]) console.log(a)' "$config")
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
# The image has no shell and no env: unshare (with no namespace of its own) enters its root, its
# working directory and its user and runs its command. The image's LD_PRELOAD is for the image's
# node: this machine's unshare, which it reaches first, preloads this machine's jemalloc too (or,
# with none here, ignores it with one line on stderr).
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
    enter=$1; mnt=$2; secret=$3; user=$4; workdir=$5; preload=$6; shift 6
    mount --bind "$mnt" "$mnt"
    mount --bind "$secret" "$mnt/run/secrets/client-secret"
    mount -t proc proc "$mnt/proc"
    mount -o remount,bind,ro "$mnt"
    exec env ${preload:+"$preload"} "$enter" --root="$mnt" --wd="$workdir" --setuid="${user%%:*}" --setgid="${user##*:}" "$@"
  ' sh "$(command -v unshare)" "$mnt" "$work/client-secret" "$user" "$workdir" "$preload" "${cmd[@]}" >"$work/proxy.log" 2>&1 &
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
[ "${argv0##*/}" = node ] || fail "PID 1 of the namespace is $argv0, not node"
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

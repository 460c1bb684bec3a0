#!/usr/bin/env bash
# npm run image:check: builds the Dockerfile for real with buildah (scripts/lib/image-build.sh: on
# a stand-in for the Node base built from this machine's Node) and runs the built image's command,
# as the image's user, on a read-only root filesystem, against the mock Ticket Service (podman
# runs it, as the pod check does, with runc and a containers.conf of its own). It prints
# what it proved at the end. scripts/pod-check.sh plays the chart's pods with the same image.
#
# No registry image can be pulled here, so the Dockerfile's bases (NODE_IMAGE, RUNTIME_IMAGE) are
# stand-ins of the same shapes, made from this machine's own Node (>= 22) by
# scripts/lib/stand-in-bases.sh.
#
# Needs root (buildah, debootstrap, podman), the npm registry (npm ci in the build
# stages) and Debian's packages (the stand-in, and apt-get in the Dockerfile).
# Everything it stores lives in a temporary folder removed at the end, but the stand-in's cache.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'image-check: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
. scripts/lib/image-build.sh

work=$(mktemp -d /tmp/image-check.XXXXXX)
image_build_init "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  image_build_cleanup
}
trap cleanup EXIT
started=$(date +%s)

# --- 1. The image, built from the Dockerfile as written -----------------------------------------
image_build_standin
image_build_dockerfile
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
"${bah[@]}" umount "$ctr" >/dev/null

# --- 2. The image's command, as its user, on a read-only root -----------------------------------
# Run by podman as the image says (its entrypoint and command, its user), on the host's network:
# nothing in the image but its own command is run, so an image without a shell passes too.
image_build_podman
npm run build --silent
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
node --input-type=module -e "
  const { createMockTicketService } = await import('./dist/mock/ticket-service.js');
  await createMockTicketService({ clients: { 'image-check': 'image-check-secret' }, tokenTtlS: 600, port: $port });
" &
pids+=($!)
printf 'image-check-secret\n' >"$work/client-secret"
chmod 0444 "$work/client-secret"
proxy_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
admin_port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
say "starting the image's command (read-only root, user $user)"
"${pod[@]}" run --detach --name image-check --read-only --read-only-tmpfs=false --network host --cap-drop ALL \
  --security-opt no-new-privileges --volume "$work/client-secret:/run/secrets/client-secret:ro" \
  --env BASE_URL="http://127.0.0.1:$port" --env CLIENT_ID=image-check --env CLIENT_SECRET_FILE=/run/secrets/client-secret \
  --env LISTEN_PORT="$proxy_port" --env ADMIN_PORT="$admin_port" --env ADMIN_HOST=127.0.0.1 \
  localhost/ticket-auth-proxy:check >/dev/null
logs() { "${pod[@]}" logs image-check 2>&1; }

deadline=$(($(date +%s) + 60))
until [ "$(node -e "fetch('http://127.0.0.1:$admin_port/readyz').then(r=>console.log(r.status),()=>console.log(0))")" = 200 ]; do
  [ "$("${pod[@]}" inspect --format '{{.State.Running}}' image-check)" = true ] || { logs; fail "the image's command exited"; }
  [ "$(date +%s)" -lt "$deadline" ] || { logs; fail "/readyz did not answer 200 within 60 s"; }
  sleep 0.2
done
livez=$(node -e "fetch('http://127.0.0.1:$admin_port/livez').then(r=>console.log(r.status),()=>console.log(0))")
[ "$livez" = 200 ] || fail "/livez answered $livez"
tickets=$(node -e "fetch('http://127.0.0.1:$proxy_port/api/v1/tickets').then(async r=>console.log(r.status, (await r.text()).length),()=>console.log(0))")
case "$tickets" in 200\ *) ;; *) logs; fail "GET /api/v1/tickets through the proxy answered $tickets" ;; esac
# node is PID 1 of the container's PID namespace: it must handle SIGTERM itself.
node_pid=$("${pod[@]}" inspect --format '{{.State.Pid}}' image-check)
argv0=$(tr '\0' '\n' <"/proc/$node_pid/cmdline" | head -1)
[ "$(basename "$argv0")" = node ] || fail "PID 1 of the container is $argv0, not node"
uid=$(awk '/^Uid:/ { print $3 }' "/proc/$node_pid/status")
[ "$uid" = "${user%%:*}" ] || fail "node runs as uid $uid, not the image's user $user"
preload=$(printf '%s\n' "${image_env[@]}" | sed -n 's/^LD_PRELOAD=//p')
if [ -n "$preload" ]; then
  grep -q "$preload" "/proc/$node_pid/maps" || fail "node runs without $preload (LD_PRELOAD=$preload is set)"
  allocator="node runs with $preload preloaded; "
fi
"${pod[@]}" stop --time 20 image-check >/dev/null
code=$("${pod[@]}" inspect --format '{{.State.ExitCode}}' image-check)
logs | grep -q EROFS && { logs; fail "the proxy tried to write to the read-only root"; }
[ "$code" = 0 ] || { logs; fail "exit status $code after SIGTERM"; }

say "OK in $(($(date +%s) - started)) s:"
say "  the Dockerfile builds as written (multi-stage, npm ci from the lockfile, tsc) on a stand-in base;"
say "  the image holds production dependencies only;"
say "  its CMD ran as $user on a read-only root: /livez 200, /readyz 200 (a token fetched from the"
say "  mock), GET /api/v1/tickets 200 through it; ${allocator:-}SIGTERM to node as PID 1 of its container: exit 0."

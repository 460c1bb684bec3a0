#!/usr/bin/env bash
# npm run release:check: what the release workflow publishes, made and used on this machine with
# no registry outside it (docs/releases.md, "Checking a release here"):
#   1. the Dockerfile built for linux/amd64 and linux/arm64 (buildah, on stand-ins of its two bases
#      from scripts/lib/stand-in-bases.sh), the two images joined in one OCI index;
#   2. the index and the chart (helm package) pushed to a local OCI registry (Debian's
#      docker-registry on a loopback port, its storage in a temporary folder);
#   3. the image pulled back by the index's digest, once per architecture, into empty storage;
#   4. each architecture run as the image runs it (its entrypoint and command, its user, its
#      environment): --version, and `check` against the mock Ticket Service on this machine;
#      arm64 under QEMU (Debian's qemu-user-static, registered with binfmt_misc for the run);
#   5. the runtime image's /usr/bin and /bin listed: no npm, no apt, no dpkg, no shell;
#   6. its SBOM (/app/sbom.cdx.json) compared with its node_modules and its Debian packages;
#   7. the chart pulled from the registry and rendered (helm template oci://…) with the image by
#      the index's digest.
# It prints the index digest, both platform digests, the SBOM's component count, the chart's OCI
# reference and its run time.
#
# Needs root (buildah, binfmt_misc, chroot), the npm registry and Debian's packages. Downloads are
# kept in ${XDG_CACHE_HOME:-$HOME/.cache}/ticket-auth-proxy-ci/release-check; everything else
# lives in a temporary folder removed at the end, and a QEMU registration it made is removed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'release-check: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (buildah, binfmt_misc, chroot)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 22 ] || fail "node $(node --version) is older than 22: put a Node 22+ first on PATH"
[ "$(dpkg --print-architecture)" = amd64 ] || fail "runs on amd64 machines (arm64 is the emulated one)"
missing=()
command -v buildah >/dev/null || missing+=(buildah)
command -v docker-registry >/dev/null || missing+=(docker-registry)
[ -e /usr/lib/binfmt.d/qemu-aarch64.conf ] || missing+=(qemu-user-static)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian's ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
helm=$(command -v helm || echo "$PWD/.cache/helm/helm")
[ -x "$helm" ] || fail "no helm on PATH or in .cache/helm (bash scripts/test-tools.sh installs it)"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/ticket-auth-proxy-ci/release-check"
work=$(mktemp -d /tmp/release-check.XXXXXX)
chmod 755 "$work"
bah=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
pulled=(buildah --root "$work/pulled" --runroot "$work/pulled-run" --storage-driver vfs)
binfmt=/proc/sys/fs/binfmt_misc
pids=() mounted_binfmt= registered=
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -z "$registered" ] || echo -1 >"$binfmt/$registered" || true
  [ -z "$mounted_binfmt" ] || umount "$binfmt" || true
  "${bah[@]}" rm --all >/dev/null 2>&1 || true
  "${pulled[@]}" rm --all >/dev/null 2>&1 || true
  chmod -R u+w "$work" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
started=$(date +%s)
version=$(node -p 'require("./package.json").version')
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
json() { node -e "const v = JSON.parse(require('fs').readFileSync(0, 'utf8')); console.log($1)"; }

# --- QEMU for arm64 ----------------------------------------------------------------------------
# Debian's registration (flag F: the interpreter is opened now, so it runs inside a chroot).
if ! mountpoint -q "$binfmt"; then
  mount -t binfmt_misc binfmt_misc "$binfmt"
  mounted_binfmt=1
fi
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  cat /usr/lib/binfmt.d/qemu-aarch64.conf >"$binfmt/register"
  registered=qemu-aarch64
  say "registered qemu-aarch64 with binfmt_misc for this run"
fi

# --- 1. Both architectures from the one Dockerfile ---------------------------------------------
stand_in_cache=$cache
# shellcheck source=lib/stand-in-bases.sh
. scripts/lib/stand-in-bases.sh
stand_in_bases amd64 arm64
image=localhost/ticket-auth-proxy:$version
"${bah[@]}" manifest create "$image" >/dev/null
for arch in amd64 arm64; do
  say "building the Dockerfile for linux/$arch"
  # This buildah sets no BUILDPLATFORM (BuildKit does): it is given, with TARGETARCH. --layers:
  # the arm64 build reuses the build stages of the amd64 one, which run on the same platform.
  "${bah[@]}" build --isolation chroot --pull=never --quiet --layers --platform "linux/$arch" \
    --build-arg BUILDPLATFORM=linux/amd64 --build-arg TARGETARCH="$arch" \
    --build-arg NODE_IMAGE="$stand_in_node_image" --build-arg RUNTIME_IMAGE="$stand_in_runtime_image-$arch" \
    --build-arg VERSION="$version" -t "$image-$arch" -f Dockerfile . >"$work/build-$arch.log" 2>&1 ||
    { tail -40 "$work/build-$arch.log"; fail "building linux/$arch"; }
  "${bah[@]}" manifest add "$image" "containers-storage:$image-$arch" >/dev/null
done

# --- 2. The index and the chart, pushed to a local registry --------------------------------------
port=$(free_port)
registry=127.0.0.1:$port
cat >"$work/registry.yml" <<EOF
version: 0.1
log: { level: warn }
storage: { filesystem: { rootdirectory: $work/registry }, delete: { enabled: true } }
http: { addr: "$registry" }
EOF
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
pids+=($!)
deadline=$(($(date +%s) + 30))
until [ "$(node -e "fetch('http://$registry/v2/').then(r=>console.log(r.status),()=>console.log(0))")" = 200 ]; do
  [ "$(date +%s)" -lt "$deadline" ] || { cat "$work/registry.log"; fail "the registry did not answer within 30 s"; }
  sleep 0.2
done
"${bah[@]}" manifest push --all --quiet --tls-verify=false --format oci --digestfile "$work/index.digest" \
  "$image" "docker://$registry/ticket-auth-proxy:$version"
index_digest=$(cat "$work/index.digest")
index=$(node -e "fetch('http://$registry/v2/ticket-auth-proxy/manifests/$index_digest', { headers: { accept: 'application/vnd.oci.image.index.v1+json' } }).then(r => r.text()).then(console.log)")
declare -A platform_digest
for arch in amd64 arm64; do
  platform_digest[$arch]=$(json "v.manifests.find((m) => m.platform.architecture === '$arch' && m.platform.os === 'linux')?.digest ?? ''" <<<"$index")
  [ -n "${platform_digest[$arch]}" ] || fail "the pushed index has no linux/$arch image: $index"
done
"$helm" package helm/ticket-auth-proxy --version "$version" --app-version "$version" -d "$work" >/dev/null
"$helm" push "$work/ticket-auth-proxy-$version.tgz" "oci://$registry/charts" --plain-http >"$work/helm-push.log" 2>&1 || { cat "$work/helm-push.log"; fail "helm push"; }
chart_digest=$(sed -n 's/^Digest: *\(sha256:[0-9a-f]\{64\}\)$/\1/p' "$work/helm-push.log")
[ -n "$chart_digest" ] || { cat "$work/helm-push.log"; fail "helm push printed no digest"; }

# --- 3 to 6. Each architecture, pulled back by the index's digest and run ------------------------
npm run build --silent
mock_port=$(free_port)
node --input-type=module -e "
  const { createMockTicketService } = await import('./dist/mock/ticket-service.js');
  await createMockTicketService({ clients: { 'release-check': 'release-check-secret' }, tokenTtlS: 600, port: $mock_port });
" &
pids+=($!)
# run_image MNT CONFIG [NAME=VALUE...] -- ARGS...: the image's entrypoint and command with ARGS
# appended, run as the image runs it: in its root, its working directory, as its user, with its
# environment and the NAME=VALUEs only. The image has no shell and no env: unshare (with no
# namespace of its own) enters them; this machine's unshare, which the image's LD_PRELOAD reaches
# first, preloads this machine's jemalloc too (or, with none here, ignores it with one line).
run_image() {
  local mnt=$1 config=$2 user workdir argv image_env extra=()
  shift 2
  while [ "$1" != -- ]; do extra+=("$1") && shift; done
  shift
  user=$(json 'v.User' <<<"$config")
  workdir=$(json 'v.WorkingDir' <<<"$config")
  mapfile -t argv < <(json '[...(v.Entrypoint ?? []), ...(v.Cmd ?? [])].join("\n")' <<<"$config")
  mapfile -t image_env < <(json '(v.Env ?? []).join("\n")' <<<"$config")
  env -i "${image_env[@]}" "${extra[@]}" \
    unshare --root="$mnt" --wd="$workdir" --setuid="${user%%:*}" --setgid="${user##*:}" "${argv[@]}" "$@"
}
declare -A sbom_line
for arch in amd64 arm64; do
  say "pulling $registry/ticket-auth-proxy@$index_digest for linux/$arch"
  "${pulled[@]}" pull --quiet --tls-verify=false --arch "$arch" --os linux "docker://$registry/ticket-auth-proxy@$index_digest" >/dev/null
  ctr=$("${pulled[@]}" from --quiet --pull=never --arch "$arch" "$registry/ticket-auth-proxy@$index_digest")
  mnt=$("${pulled[@]}" mount "$ctr")
  config=$("${pulled[@]}" inspect --type container "$ctr" | json 'JSON.stringify(v.OCIv1.config)')
  got_arch=$("${pulled[@]}" inspect --type container "$ctr" | json 'v.OCIv1.architecture')
  [ "$got_arch" = "$arch" ] || fail "pulled for linux/$arch, got a $got_arch image"
  # The machine a binary is built for: its ELF header's e_machine (0x3e x86-64, 0xb7 AArch64).
  entry=$(json 'v.Entrypoint?.[0] ?? ""' <<<"$config")
  machine=$(node -e 'const b = require("fs").readFileSync(process.argv[1]); console.log({ 0x3e: "amd64", 0xb7: "arm64" }[b.readUInt16LE(18)] ?? "other")' "$mnt$entry")
  [ "$machine" = "$arch" ] || fail "the linux/$arch image's $entry is built for $machine"

  out=$(run_image "$mnt" "$config" -- --version 2>"$work/run.err") || { cat "$work/run.err"; fail "--version on linux/$arch"; }
  [[ "$out" == *"$version"* ]] || fail "--version on linux/$arch printed '$out', not $version"
  say "linux/$arch: --version printed '$out'"

  mkdir -p "$mnt/run/secrets"
  printf 'release-check-secret\n' >"$mnt/run/secrets/client-secret"
  out=$(run_image "$mnt" "$config" BASE_URL="http://127.0.0.1:$mock_port" CLIENT_ID=release-check \
    CLIENT_SECRET_FILE=/run/secrets/client-secret -- check 2>"$work/run.err") || { printf '%s\n' "$out"; cat "$work/run.err"; fail "check on linux/$arch"; }
  say "linux/$arch: check against the mock exited 0: $(head -1 <<<"$out")"

  for dir in usr/bin bin; do
    if [ -d "$mnt/$dir" ]; then listing=$(ls "$mnt/$dir" | tr '\n' ' '); else listing="(absent)"; fi
    say "linux/$arch: /$dir: ${listing:-(empty)}"
  done
  found=$(find "$mnt" -path "$mnt/app" -prune -o -path "$mnt/proc" -prune -o \
    \( -name npm -o -name npx -o -name corepack -o -name 'apt*' -o -name 'dpkg*' -o -name sh -o -name bash -o -name dash -o -name busybox \) \
    \( -type f -o -type l \) -print)
  [ -z "$found" ] || fail "the linux/$arch runtime image holds $found"
  sbom_line[$arch]=$(node scripts/lib/image-sbom-check.mjs "$mnt") || fail "the linux/$arch image's SBOM does not match what it holds"
  say "linux/$arch: SBOM: ${sbom_line[$arch]}"
  "${pulled[@]}" umount "$ctr" >/dev/null
  "${pulled[@]}" rm "$ctr" >/dev/null
done

# --- 7. The chart, from the registry, with the image by digest ----------------------------------
chart_ref="oci://$registry/charts/ticket-auth-proxy"
rendered=$("$helm" template tickets "$chart_ref" --version "$version" --plain-http \
  --set image.repository="$registry/ticket-auth-proxy" --set image.digest="$index_digest" \
  --set baseUrl=https://tickets.example.com --set existingSecret=ticket-service-credentials 2>"$work/helm.err") ||
  { cat "$work/helm.err"; fail "helm template $chart_ref"; }
grep -q "image: \"\\?$registry/ticket-auth-proxy@$index_digest\"\\?\$" <<<"$rendered" ||
  fail "the chart from $chart_ref does not render the image $registry/ticket-auth-proxy@$index_digest"

say "OK in $(($(date +%s) - started)) s:"
say "  index           $registry/ticket-auth-proxy@$index_digest"
say "  linux/amd64     ${platform_digest[amd64]}"
say "  linux/arm64     ${platform_digest[arm64]}"
say "  SBOM            ${sbom_line[amd64]%% *} components (amd64), ${sbom_line[arm64]%% *} (arm64)"
say "  chart           $chart_ref:$version@$chart_digest, rendered with the image by digest"
say "  each architecture pulled by the index's digest ran --version and check against the mock"
say "  (arm64 under QEMU); no npm, apt, dpkg or shell in the runtime image."

